import type { KubeConfig } from '@kubernetes/client-node';
import { kubeRequest } from './rest';

/**
 * The apiserver's own count of the requests it served, as `VERB resource[/subresource]` -> total,
 * from `apiserver_request_total` on /metrics. It counts every client, so a measurement of one
 * component's requests wants a control plane of its own (ControlPlane.start).
 */
export async function apiserverRequestCounts(kubeConfig: KubeConfig): Promise<Map<string, number>> {
  const res = await kubeRequest(kubeConfig, { path: '/metrics' });
  const counts = new Map<string, number>();
  for (const line of String(res.body).split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    const key = `${labels.verb} ${labels.resource}${labels.subresource ? `/${labels.subresource}` : ''}`;
    counts.set(key, (counts.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return counts;
}

/** What changed between two counts, keeping only the keys that grew. */
export function requestCountDelta(
  before: Map<string, number>,
  after: Map<string, number>,
): Map<string, number> {
  const delta = new Map<string, number>();
  for (const [key, value] of after) {
    const grown = value - (before.get(key) ?? 0);
    if (grown > 0) delta.set(key, grown);
  }
  return delta;
}
