import {
  Annotations,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  DEFAULT_RUNNER_GROUP_ID,
} from '@aro/api';
import { ActionsServiceClient, RunnerScaleSet, isActionsNotFound } from '@aro/actions';
import type { Reader } from '@aro/kube';
import { RunnerGroupNotFoundError, ScaleSetClaimedError } from '../shared/failure-reasons';
import { scaleSetName } from './runner-scale-set-resources';

/*
 * The scale set's side on the Actions service: found by name in its runner group, or created with
 * the set's labels and runner updates disabled (ARC pins the runner version in the image; an
 * auto-updating runner would replace itself mid-pod).
 */

export async function runnerGroupId(
  client: ActionsServiceClient,
  group: string | undefined,
  signal: AbortSignal,
): Promise<{ id: number; name: string }> {
  if (!group) return { id: DEFAULT_RUNNER_GROUP_ID, name: 'Default' };
  try {
    const found = await client.getRunnerGroupByName(group, { signal });
    return { id: found.id, name: found.name };
  } catch (err) {
    if (isActionsNotFound(err)) {
      throw new RunnerGroupNotFoundError(
        `runner group ${JSON.stringify(group)} does not exist for this GitHub configuration; create it or change spec.runnerGroup`,
        { cause: err },
      );
    }
    throw err;
  }
}

/** System labels of a scale set: its name, then each extra label once. */
export function scaleSetLabelsOf(ars: AutoscalingRunnerSet): Array<{ name: string; type: string }> {
  const names = [scaleSetName(ars), ...(ars.spec.runnerScaleSetLabels ?? [])];
  return [...new Set(names.filter((n) => n.trim() !== ''))].map((name) => ({ name, type: 'System' }));
}

/** The scale set of that name in that group, adopted as it is, or a new one. */
export async function findOrCreateScaleSet(
  client: ActionsServiceClient,
  ars: AutoscalingRunnerSet,
  groupId: number,
  signal: AbortSignal,
): Promise<{ scaleSet: RunnerScaleSet; created: boolean }> {
  const name = scaleSetName(ars);
  const existing = await client.getRunnerScaleSet(groupId, name, { signal });
  if (existing) return { scaleSet: existing, created: false };
  const scaleSet = await client.createRunnerScaleSet(
    { name, runnerGroupId: groupId, labels: scaleSetLabelsOf(ars), runnerSetting: { disableUpdate: true } },
    { signal },
  );
  return { scaleSet, created: true };
}

/** The scale set by ID, or undefined when the service says it is gone. */
export async function scaleSetById(
  client: ActionsServiceClient,
  id: number,
  signal: AbortSignal,
): Promise<RunnerScaleSet | undefined> {
  try {
    return await client.getRunnerScaleSetById(id, { signal });
  } catch (err) {
    if (isActionsNotFound(err)) return undefined;
    throw err;
  }
}

/** The GitHub configuration URL as one tenant: case and trailing slashes do not make another one. */
function configKey(url: string | undefined): string {
  return (url ?? '').trim().replace(/\/+$/, '').toLowerCase();
}

/**
 * Another AutoscalingRunnerSet of this cluster that already records scale set `id` of the same GitHub
 * configuration, if any. The service knows one scale set per name in a runner group, so two sets with
 * the same name (in two namespaces, say) would both adopt it: their listeners would fight over its one
 * message session and split its jobs, and deleting either set would delete the scale set under the
 * other (upstream adopts silently). Read from the informer cache, so the check costs no API call.
 */
export async function claimantOf(
  cache: Reader,
  ars: AutoscalingRunnerSet,
  id: number,
): Promise<AutoscalingRunnerSet | undefined> {
  const all = await cache.list<AutoscalingRunnerSet>(AutoscalingRunnerSetKind);
  return all.find(
    (other) =>
      other.metadata?.uid !== ars.metadata?.uid &&
      !other.metadata?.deletionTimestamp &&
      other.metadata?.annotations?.[Annotations.runnerScaleSetId] === String(id) &&
      configKey(other.spec.githubConfigUrl) === configKey(ars.spec.githubConfigUrl),
  );
}

/** Refuses to adopt a scale set another set of this cluster uses, naming it and the way out. */
export async function refuseClaimedScaleSet(
  cache: Reader,
  ars: AutoscalingRunnerSet,
  scaleSet: RunnerScaleSet,
  groupName: string,
): Promise<void> {
  const other = await claimantOf(cache, ars, scaleSet.id);
  if (!other) return;
  throw new ScaleSetClaimedError(
    `runner scale set ${JSON.stringify(scaleSet.name)} (ID ${scaleSet.id}) in runner group ${JSON.stringify(groupName)} ` +
      `is already used by AutoscalingRunnerSet ${other.metadata?.namespace}/${other.metadata?.name} for this GitHub ` +
      `configuration; two sets sharing one scale set would split its jobs and delete it under each other. ` +
      `Give this set another spec.runnerScaleSetName or spec.runnerGroup`,
  );
}
