/** What the job metrics label a workflow by, from `job_workflow_ref`. */
export interface WorkflowRefInfo {
  /** The workflow file name without `.yml` / `.yaml`. */
  name: string;
  /** `heads/<branch>`, `tags/<tag>` or `pull/<number>`; empty for other refs. */
  target: string;
}

/**
 * Parses `{owner}/{repo}/.github/workflows/{file}@{ref}` as upstream's listener does, so dashboards
 * built on its `job_workflow_name` / `job_workflow_target` labels read the same values.
 */
export function parseWorkflowRef(workflowRef: string): WorkflowRefInfo {
  const info: WorkflowRefInfo = { name: '', target: '' };
  const parts = workflowRef.split('@');
  if (workflowRef === '' || parts.length !== 2) return info;
  const [path, ref] = parts;
  const file = path.slice(path.lastIndexOf('/') + 1);
  info.name = file.replace(/\.yml$/, '').replace(/\.yaml$/, '');
  if (ref.startsWith('refs/heads/')) info.target = `heads/${ref.slice('refs/heads/'.length)}`;
  else if (ref.startsWith('refs/tags/')) info.target = `tags/${ref.slice('refs/tags/'.length)}`;
  else if (ref.startsWith('refs/pull/')) {
    const rest = ref.slice('refs/pull/'.length);
    const slash = rest.indexOf('/');
    if (slash > 0) info.target = `pull/${rest.slice(0, slash)}`;
  }
  return info;
}
