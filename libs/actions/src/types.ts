/**
 * The objects of the Actions service scale-set API. Field names follow the wire (lower camel case),
 * except the scale set's `RunnerSetting`, which the service spells capitalised and which is exposed
 * here as `runnerSetting`; the client converts at the boundary.
 */

export interface RunnerReference {
  id: number;
  name: string;
  runnerScaleSetId: number;
}

export interface RunnerScaleSetJitRunnerConfig {
  runner: RunnerReference;
  /** Opaque to the operator: stored in a Secret and handed to the runner as ACTIONS_RUNNER_INPUT_JITCONFIG. */
  encodedJITConfig: string;
}

export interface RunnerGroup {
  id: number;
  name: string;
  size: number;
  isDefaultGroup: boolean;
}

export interface Label {
  name: string;
  type: string;
}

export interface RunnerSetting {
  disableUpdate?: boolean;
  ephemeral?: boolean;
  isElastic?: boolean;
}

export interface RunnerScaleSetStatistic {
  totalAvailableJobs: number;
  totalAcquiredJobs: number;
  totalAssignedJobs: number;
  totalRunningJobs: number;
  totalRegisteredRunners: number;
  totalBusyRunners: number;
  totalIdleRunners: number;
}

export interface RunnerScaleSet {
  id: number;
  name: string;
  runnerGroupId: number;
  runnerGroupName: string;
  labels: Label[];
  runnerSetting: RunnerSetting;
  createdOn: string;
  runnerJitConfigUrl: string;
  statistics?: RunnerScaleSetStatistic;
}

/** What a caller gives to create a scale set; the server assigns the rest. */
export interface RunnerScaleSetCreate {
  name: string;
  runnerGroupId: number;
  /** At least one label is always sent: `[{ name, type: 'System' }]` when none is given. */
  labels?: Array<{ name: string; type?: string }>;
  runnerSetting?: RunnerSetting;
}

/** A partial update: fields left out keep their stored value. */
export interface RunnerScaleSetUpdate {
  name?: string;
  runnerGroupId?: number;
  labels?: Array<{ name: string; type?: string }>;
  runnerSetting?: RunnerSetting;
}

export interface RunnerScaleSetSession {
  sessionId: string;
  ownerName: string;
  runnerScaleSet?: RunnerScaleSet;
  messageQueueUrl: string;
  messageQueueAccessToken: string;
  statistics?: RunnerScaleSetStatistic;
}

export interface RunnerScaleSetMessage {
  messageId: number;
  /** `RunnerScaleSetJobMessages` for every message the listener understands. */
  messageType: string;
  /** A JSON array of job messages, as a string; `parseJobMessages` decodes it. */
  body: string;
  statistics?: RunnerScaleSetStatistic;
}

export const runnerScaleSetJobMessagesType = 'RunnerScaleSetJobMessages';

export interface JobMessageBase {
  messageType: string;
  runnerRequestId: number;
  repositoryName: string;
  ownerName: string;
  jobId: string;
  jobWorkflowRef: string;
  jobDisplayName: string;
  workflowRunId: number;
  eventName: string;
  requestLabels: string[];
  queueTime: string;
  scaleSetAssignTime: string;
  runnerAssignTime: string;
  finishTime: string;
}

export interface JobAvailable extends JobMessageBase {
  messageType: 'JobAvailable';
  acquireJobUrl: string;
}

export interface JobAssigned extends JobMessageBase {
  messageType: 'JobAssigned';
}

export interface JobStarted extends JobMessageBase {
  messageType: 'JobStarted';
  runnerId: number;
  runnerName: string;
}

export interface JobCompleted extends JobMessageBase {
  messageType: 'JobCompleted';
  result: string;
  runnerId: number;
  runnerName: string;
}

export type JobMessage = JobAvailable | JobAssigned | JobStarted | JobCompleted;

export interface AcquirableJob {
  acquireJobUrl: string;
  messageType: string;
  runnerRequestId: number;
  repositoryName: string;
  ownerName: string;
  jobWorkflowRef: string;
  eventName: string;
  requestLabels: string[];
}

const knownJobMessageTypes = new Set(['JobAvailable', 'JobAssigned', 'JobStarted', 'JobCompleted']);

/**
 * The job messages inside a `RunnerScaleSetJobMessages` message. An empty body carries none; types
 * the listener does not know are skipped, as the service may add new ones.
 */
export function parseJobMessages(message: RunnerScaleSetMessage): JobMessage[] {
  if (message.messageType !== runnerScaleSetJobMessagesType) {
    throw new Error(
      `message ${message.messageId} has unsupported type ${JSON.stringify(message.messageType)}`,
    );
  }
  if (!message.body) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(message.body);
  } catch (e) {
    throw new Error(`message ${message.messageId} body is not JSON: ${(e as Error).message}`, { cause: e });
  }
  if (!Array.isArray(parsed)) throw new Error(`message ${message.messageId} body is not a JSON array`);
  return parsed.filter(
    (m): m is JobMessage =>
      m !== null &&
      typeof m === 'object' &&
      knownJobMessageTypes.has((m as { messageType?: unknown }).messageType as string),
  );
}

/** The scale set as the service sends it. */
export interface WireRunnerScaleSet {
  id?: number;
  name?: string;
  runnerGroupId?: number;
  runnerGroupName?: string;
  labels?: Label[];
  RunnerSetting?: RunnerSetting;
  createdOn?: string;
  runnerJitConfigUrl?: string;
  statistics?: RunnerScaleSetStatistic;
}

export function fromWireScaleSet(w: WireRunnerScaleSet): RunnerScaleSet {
  return {
    id: w.id ?? 0,
    name: w.name ?? '',
    runnerGroupId: w.runnerGroupId ?? 0,
    runnerGroupName: w.runnerGroupName ?? '',
    labels: w.labels ?? [],
    runnerSetting: w.RunnerSetting ?? {},
    createdOn: w.createdOn ?? zeroTime,
    runnerJitConfigUrl: w.runnerJitConfigUrl ?? '',
    statistics: w.statistics,
  };
}

/** Go's zero time.Time; the Go client always sends `createdOn`, and services expect a valid time there. */
export const zeroTime = '0001-01-01T00:00:00Z';

function normaliseLabels(labels: Array<{ name: string; type?: string }>): Label[] {
  return labels.map((l) => ({ name: l.name, type: l.type || 'System' }));
}

export function toWireCreate(rs: RunnerScaleSetCreate): WireRunnerScaleSet {
  const labels =
    rs.labels && rs.labels.length > 0 ? normaliseLabels(rs.labels) : [{ name: rs.name, type: 'System' }];
  return {
    name: rs.name,
    runnerGroupId: rs.runnerGroupId,
    labels,
    RunnerSetting: rs.runnerSetting ?? {},
    createdOn: zeroTime,
  };
}

export function toWireUpdate(u: RunnerScaleSetUpdate): WireRunnerScaleSet {
  const w: WireRunnerScaleSet = {};
  if (u.name) w.name = u.name;
  if (u.runnerGroupId) w.runnerGroupId = u.runnerGroupId;
  if (u.labels && u.labels.length > 0) w.labels = normaliseLabels(u.labels);
  w.RunnerSetting = u.runnerSetting ?? {};
  w.createdOn = zeroTime;
  return w;
}
