import { EphemeralRunner, Labels, hasJob } from '@aro/api';
import type { KubeObject } from '@aro/kube';
import type { Logger } from '@aro/observability';
import type { RunnerStatusWriter } from './status-writer';
import { describeError } from '../shared/describe-error';

/**
 * Which job a runner executes, on its pod and its EphemeralRunner, so that `kubectl get pods -l
 * actions.github.com/repository=<repo>` finds the pods of a repository's jobs (upstream #4485: "which
 * job is this pod running" has no answer in upstream's objects, only in the runner's logs).
 *
 * Each value is a label where it is a valid label value (a selector can find it), and an annotation of
 * the same key otherwise (a repository name longer than 63 characters, a workflow ref with slashes):
 * nothing is cut, so a value read is the value the service gave. The repository and organization keys
 * are the ones upstream already sets from a repository- or organization-scoped config URL, with the same
 * values there; the job's fill them in for an enterprise- or organization-scoped scale set.
 */
export const JobLinkKeys = {
  organization: Labels.organization,
  repository: Labels.repository,
  /** The workflow's file name without `.yml`/`.yaml`, as the `job_workflow_name` metric label. */
  workflow: 'actions.github.com/workflow',
  /** `owner/repo/.github/workflows/file.yml@ref`: never a label value. */
  workflowRef: 'actions.github.com/workflow-ref',
  workflowRunId: 'actions.github.com/workflow-run-id',
  jobId: 'actions.github.com/job-id',
} as const;

export interface JobLinkMetadata {
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

/** A valid, non-empty Kubernetes label value: at most 63 characters of `[A-Za-z0-9-_.]`, alphanumeric at both ends. */
export function isLabelValue(value: string): boolean {
  return value.length > 0 && value.length <= 63 && LABEL_VALUE.test(value);
}

function workflowName(workflowRef: string): string {
  const path = workflowRef.split('@')[0] ?? '';
  return path
    .slice(path.lastIndexOf('/') + 1)
    .replace(/\.yml$/, '')
    .replace(/\.yaml$/, '');
}

/** The job link of a runner with a job, from the job fields the listener wrote on its status; undefined without a job. */
export function jobLinkMetadata(runner: Pick<EphemeralRunner, 'status'>): JobLinkMetadata | undefined {
  if (!hasJob(runner)) return undefined;
  const status = runner.status ?? {};
  const [owner = '', ...repo] = (status.jobRepositoryName ?? '').split('/');
  const values: Record<string, string> = {
    [JobLinkKeys.organization]: repo.length > 0 ? owner : '',
    [JobLinkKeys.repository]: repo.join('/'),
    [JobLinkKeys.workflow]: workflowName(status.jobWorkflowRef ?? ''),
    [JobLinkKeys.workflowRef]: status.jobWorkflowRef ?? '',
    [JobLinkKeys.workflowRunId]: status.workflowRunId ? String(status.workflowRunId) : '',
    [JobLinkKeys.jobId]: status.jobId ?? '',
  };
  const link: JobLinkMetadata = { labels: {}, annotations: {} };
  for (const [key, value] of Object.entries(values)) {
    if (value === '') continue;
    if (isLabelValue(value)) link.labels[key] = value;
    else link.annotations[key] = value;
  }
  return link;
}

/** Whether the object already carries every label and annotation of the link. */
export function carriesJobLink(obj: KubeObject, link: JobLinkMetadata): boolean {
  const labels = obj.metadata?.labels ?? {};
  const annotations = obj.metadata?.annotations ?? {};
  return (
    Object.entries(link.labels).every(([k, v]) => labels[k] === v) &&
    Object.entries(link.annotations).every(([k, v]) => annotations[k] === v)
  );
}

/**
 * Puts the job link on the EphemeralRunner, once per job: one metadata patch (a label cannot ride the
 * listener's status write, which the status subresource confines to `status`). Returns the runner as
 * written, for the rest of the pass to act on.
 */
export async function linkRunnerToJob(
  runner: EphemeralRunner,
  status: RunnerStatusWriter,
  log: Logger,
): Promise<EphemeralRunner> {
  const link = jobLinkMetadata(runner);
  if (!link || carriesJobLink(runner, link)) return runner;
  let updated: EphemeralRunner;
  try {
    updated = await status.patch(runner, { metadata: link });
  } catch (err) {
    throw new Error(`failed to label the runner with its job: ${describeError(err)}`, { cause: err });
  }
  log.info('Linked the runner to its job', { jobId: runner.status?.jobId, ...link.labels });
  return updated;
}
