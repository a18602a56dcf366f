/**
 * Public shapes of the simulator: what tests pass in (seed, owners, jobs, faults) and what they read
 * back (views of runners, jobs, sessions, scale sets). Views are plain JSON-safe snapshots, never the
 * live state objects, so a test cannot mutate the simulator behind its back.
 */

/** An owner a config URL can point at: an organization, a repository, or an enterprise. */
export type OwnerRef = { org: string; repo?: string } | { enterprise: string };

export interface TokenLifetimes {
  /** Lifetime of the Actions-service admin JWT from runner-registration. Short values exercise the 60 s refresh margin. */
  adminTokenSeconds: number;
  /** Lifetime of a session's message-queue token (401 on the queue after it). */
  queueTokenSeconds: number;
  /** Lifetime of a GitHub App installation access token (`ghs_...`). */
  installationTokenSeconds: number;
  /** Lifetime of a runner registration token (GitHub: one hour). */
  registrationTokenSeconds: number;
}

export interface TimingOptions {
  /** How long a message long poll is held before 202 (the real service: about 50 s). */
  longPollTimeoutMs: number;
  /** A session that has not polled for this long may be taken over by a new one; 0 = never. */
  sessionIdleTimeoutMs: number;
  /** A JobAvailable not acquired within this time is offered again; 0 = never. */
  jobReofferMs: number;
  /** A job acquired but not started on a runner within this time is cancelled and re-queued; 0 = never. */
  jobStartTimeoutMs: number;
  /** Start attempts before a job that keeps timing out is finally completed as canceled. */
  maxJobStartAttempts: number;
  /** How often the timeout sweep runs (real time). */
  sweepIntervalMs: number;
  /** Start acquired jobs on idle online runners of the scale set by themselves (JobStarted). */
  autoStartJobs: boolean;
  /** Reject admin-token Actions calls without `api-version=6.0-preview` (400). */
  requireApiVersion: boolean;
}

export interface PatSeed {
  token: string;
  /** Owners the PAT may act for; absent = every owner, including ones created later. */
  owners?: OwnerRef[];
}

export interface AppSeed {
  appId?: number;
  clientId?: string;
  /** PEM (SPKI or PKCS#1) public key the app JWTs are verified with. */
  publicKeyPem: string;
  /** Owners the app is installed on; each gets an installation id. */
  installations?: OwnerRef[];
}

export interface SeedOptions {
  /** Include the default seed (org `octo` in enterprise `ent`, repo `octo/hello`, PAT `ghp_simulator`). Default true. */
  defaults?: boolean;
  enterprises?: string[];
  orgs?: Array<{ name: string; enterprise?: string }>;
  /** `owner/name`; the owner org is created if missing. */
  repos?: string[];
  pats?: PatSeed[];
  apps?: AppSeed[];
  runnerGroups?: Array<{ owner: OwnerRef; name: string }>;
  tokenLifetimes?: Partial<TokenLifetimes>;
  timing?: Partial<TimingOptions>;
}

export interface RegisteredApp {
  appId: number;
  clientId: string;
  /** Installation id per owner, in the order the installations were made. */
  installations: Array<{ owner: OwnerRef; installationId: number }>;
}

export type JobResult = 'succeeded' | 'failed' | 'canceled' | 'skipped';

export type JobState =
  /** waiting for a matching scale set with a live session */
  | 'queued'
  /** offered to a scale set (JobAvailable sent) */
  | 'available'
  /** acquired by the scale set (JobAssigned sent), possibly bound to a runner but not started */
  | 'acquired'
  /** started on a runner (JobStarted sent) */
  | 'running'
  | 'completed';

export interface EnqueueJobOptions {
  /** Labels the job requests (`runs-on`); default: the target scale set's name. */
  labels?: string[];
  /** Offer only to this scale set. */
  scaleSetId?: number;
  /** `owner/name` of the repository the workflow runs in. */
  repo?: string;
  workflowRef?: string;
  displayName?: string;
  eventName?: string;
  /** Once started, the job completes by itself (succeeded) after this long. */
  durationMs?: number;
}

/** A scale set made through the admin API, as a person or a sandbox script would (no protocol calls). */
export interface CreateScaleSetOptions {
  name: string;
  /** Runner group id in the owner's tenant; default 1 (`Default`). */
  runnerGroupId?: number;
  /** Runner group by name, created in the owner's tenant when missing; wins over `runnerGroupId`. */
  runnerGroup?: string;
  /** Label names (type `System`); default: the scale set's name. */
  labels?: string[];
  /** Stored as the scale set's `RunnerSetting`. */
  runnerSetting?: Record<string, unknown>;
}

/** Narrows `registrations()` / `GET /_sim/runners`; absent fields match every runner. */
export interface RunnerFilter {
  scaleSetId?: number;
  status?: RunnerStatus;
}

/** Narrows `jobs()` / `GET /_sim/jobs`; absent fields match every job. */
export interface JobFilter {
  state?: JobState;
  scaleSetId?: number;
}

export interface JobView {
  jobId: string;
  runnerRequestId: number;
  state: JobState;
  labels: string[];
  repo: string;
  workflowRef: string;
  displayName: string;
  eventName: string;
  workflowRunId: number;
  scaleSetId: number | null;
  runnerId: number | null;
  runnerName: string | null;
  result: JobResult | null;
  startAttempts: number;
  queueTime: string;
  scaleSetAssignTime: string;
  runnerAssignTime: string;
  finishTime: string;
}

export type RunnerStatus = 'offline' | 'idle' | 'busy';

export interface RunnerView {
  id: number;
  name: string;
  tenantId: string;
  scaleSetId: number;
  status: RunnerStatus;
  /** The job bound to the runner (assigned or running), if any. */
  jobId: string | null;
  createdOn: string;
}

export interface SessionView {
  sessionId: string;
  ownerName: string;
  tenantId: string;
  scaleSetId: number;
  messageQueueUrl: string;
  /** Highest message id acknowledged (by lastMessageId or DELETE). */
  acknowledgedMessageId: number;
  /** Messages not yet acknowledged. */
  pendingMessages: number;
  /** Last `X-ScaleSetMaxCapacity` the listener sent, if any. */
  maxCapacity: number | null;
}

export interface ScaleSetStatistics {
  totalAvailableJobs: number;
  totalAcquiredJobs: number;
  totalAssignedJobs: number;
  totalRunningJobs: number;
  totalRegisteredRunners: number;
  totalBusyRunners: number;
  totalIdleRunners: number;
}

export interface ScaleSetLabel {
  type: string;
  name: string;
}

export interface ScaleSetView {
  id: number;
  name: string;
  tenantId: string;
  runnerGroupId: number;
  runnerGroupName: string;
  labels: ScaleSetLabel[];
  runnerSetting: Record<string, unknown>;
  createdOn: string;
  statistics: ScaleSetStatistics;
}

/**
 * Fault injection on protocol routes. `route` is a call-counter key such as `DELETE agents/{id}` or
 * `POST actions/runner-registration`, or `*` for every protocol route.
 */
export interface FaultSpec {
  route: string;
  /** Calls affected; absent = until cleared. */
  times?: number;
  /** Fraction of matching calls affected (0..1); absent = all. Drawn from a seeded generator. */
  errorRate?: number;
  /** Delay before the call is handled (also before an injected error). */
  latencyMs?: number;
  /** Answer with this status instead of handling the call (5xx, 429, 501, 401, 403...). */
  status?: number;
  /** `Retry-After` seconds sent with an injected status (429 / 503). */
  retryAfterSeconds?: number;
  /** Destroy the socket without an answer. */
  drop?: boolean;
  /** Prefix JSON response bodies with a UTF-8 BOM (the call is otherwise handled normally). */
  bom?: boolean;
  /** Send error bodies as `text/plain` instead of VSS JSON (the call is otherwise handled normally). */
  textPlainErrors?: boolean;
  /** Send error bodies empty with `Content-Length: 0`. */
  emptyErrorBodies?: boolean;
}

export interface SimulatorStateView {
  scaleSets: ScaleSetView[];
  runners: RunnerView[];
  jobs: JobView[];
  sessions: SessionView[];
}
