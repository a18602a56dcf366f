import { request, type RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { kubeRequest } from '../../harness/rest';
import type { ControllerRequest } from './partition';

/*
 * An apiserver that sheds one client's load, with API priority and fairness as a cluster administrator
 * would set it up: a FlowSchema that sends the client's requests to a priority level with no seats and
 * the Reject response, so each is answered 429 with the Retry-After the apiserver computes (1 s, doubled
 * while drops go on, at most 32 s). A level without seats still runs one request when it runs none (the
 * queue set's rule for a request wider than the limit), so a probe user matched by the same FlowSchema
 * holds that one: a create whose body it sends a byte a second, which the apiserver reads inside its
 * handler, seat held. The same probe user reads what the apiserver asks for at each moment.
 */

export const SHED_NAME = 'aro-test-shed';
export const PROBE_USER = 'aro-shed-probe';
const FLOWCONTROL = '/apis/flowcontrol.apiserver.k8s.io/v1';

/**
 * Sheds `serviceAccount`'s requests on the core and actions.github.com groups (its Leases, in
 * coordination.k8s.io, go on as before: this is load shedding, not a partition) and the probe user's.
 */
export async function startShedding(
  kc: KubeConfig,
  serviceAccount: { namespace: string; name: string },
): Promise<void> {
  const create = async (path: string, body: unknown): Promise<void> => {
    const res = await kubeRequest(kc, { method: 'POST', path, body });
    if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  };
  await create(`${FLOWCONTROL}/prioritylevelconfigurations`, {
    apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
    kind: 'PriorityLevelConfiguration',
    metadata: { name: SHED_NAME },
    spec: {
      type: 'Limited',
      // No seats of its own and none borrowed: every request of the level is refused at once.
      limited: {
        nominalConcurrencyShares: 0,
        lendablePercent: 0,
        borrowingLimitPercent: 0,
        limitResponse: { type: 'Reject' },
      },
    },
  });
  await create(`${FLOWCONTROL}/flowschemas`, {
    apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
    kind: 'FlowSchema',
    metadata: { name: SHED_NAME },
    spec: {
      priorityLevelConfiguration: { name: SHED_NAME },
      // Before the default `service-accounts` schema (9000), after the system ones.
      matchingPrecedence: 500,
      distinguisherMethod: { type: 'ByUser' },
      rules: [
        {
          subjects: [
            { kind: 'ServiceAccount', serviceAccount },
            { kind: 'User', user: { name: PROBE_USER } },
          ],
          resourceRules: [
            {
              verbs: ['*'],
              apiGroups: ['', 'actions.github.com'],
              resources: ['*'],
              namespaces: ['*'],
              clusterScope: true,
            },
          ],
        },
      ],
    },
  });
}

/** Lets the probe user create and read ConfigMaps in `default`, so its held create reaches the handler. */
export async function allowProbe(kc: KubeConfig): Promise<void> {
  const rbac = '/apis/rbac.authorization.k8s.io/v1/namespaces/default';
  for (const [path, body] of [
    [
      `${rbac}/roles`,
      {
        metadata: { name: PROBE_USER },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['create', 'get'] }],
      },
    ],
    [
      `${rbac}/rolebindings`,
      {
        metadata: { name: PROBE_USER },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: PROBE_USER },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: PROBE_USER }],
      },
    ],
  ] as const) {
    const res = await kubeRequest(kc, { method: 'POST', path, body });
    if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  }
}

/**
 * Takes the level's one seat: a create by the probe user whose body trickles in a byte a second, for up
 * to `ms`. Resolves once it holds the seat (no answer came: a refused one is answered at once and tried
 * again); `release()` ends it.
 */
export async function holdTheSeat(kc: KubeConfig, ms: number): Promise<{ release: () => void }> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('no current cluster');
  const url = new URL('/api/v1/namespaces/default/configmaps', cluster.server);
  const json = JSON.stringify({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: `${PROBE_USER}-held` },
  });
  const padding = Math.ceil(ms / 1000) + 10;
  for (let attempt = 0; attempt < 30; attempt++) {
    const options: RequestOptions = {
      method: 'POST',
      hostname: url.hostname,
      port: url.port,
      path: url.pathname,
      headers: {
        'Content-Type': 'application/json',
        'Content-Length': padding + Buffer.byteLength(json),
        'Impersonate-User': PROBE_USER,
      },
    };
    await kc.applyToHTTPSOptions(options);
    let answered = false;
    const req = request(options, (res) => {
      answered = true;
      res.resume();
    });
    req.on('error', () => (answered = true));
    req.flushHeaders();
    // Leading whitespace is valid JSON; the object itself never arrives while the seat is held.
    let sent = 0;
    const drip = setInterval(() => {
      if (sent < padding - 1) req.write(' ');
      sent++;
    }, 1_000);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    if (!answered) {
      const release = (): void => {
        clearInterval(drip);
        req.destroy();
      };
      setTimeout(release, ms).unref();
      return { release };
    }
    clearInterval(drip);
    req.destroy();
  }
  throw new Error("could not take the priority level's seat in 30 attempts");
}

/** Ends the shedding: the FlowSchema and its priority level deleted. */
export async function stopShedding(kc: KubeConfig): Promise<void> {
  for (const kind of ['flowschemas', 'prioritylevelconfigurations']) {
    const res = await kubeRequest(kc, {
      method: 'DELETE',
      path: `${FLOWCONTROL}/${kind}/${SHED_NAME}`,
    });
    if (res.status !== 200 && res.status !== 404) throw new Error(`DELETE ${kind}: ${res.status}`);
  }
}

/** One probe: 429 and its Retry-After (seconds) while shedding; another status once it stopped. */
export async function probe(kc: KubeConfig): Promise<{ atMs: number; status: number; retryAfter?: number }> {
  const atMs = Date.now();
  const res = await kubeRequest(kc, {
    path: `/api/v1/namespaces/default/configmaps/${PROBE_USER}`,
    headers: { 'Impersonate-User': PROBE_USER },
  });
  const header = res.headers['retry-after'];
  return {
    atMs,
    status: res.status,
    ...(typeof header === 'string' ? { retryAfter: Number(header) } : {}),
  };
}

/** A refused request sent again sooner than the apiserver asked. */
export interface EarlyRetry {
  refused: ControllerRequest;
  again: ControllerRequest;
  askedSeconds: number;
}

/**
 * A refused request whose next attempt can be told apart: one on a named object; a watch (one per
 * informer); a create of EphemeralRunners, which the scale set's one EphemeralRunnerSet makes one at a
 * time (by generateName, so the audit log names none). Another create without a name, or a list, may be
 * another worker's request for another object.
 */
export function judgeable(r: ControllerRequest): boolean {
  return (
    r.code === 429 &&
    (r.name !== '' || r.verb === 'watch' || (r.verb === 'create' && r.resource === 'ephemeralrunners'))
  );
}

/**
 * Each judgeable request the apiserver refused with 429, against the next request of the same verb on
 * the same object (or collection): sent again before the Retry-After the apiserver was giving out then?
 * What it gave out is the least the probe read from 2.5 s before to 1.5 s after (the value moves once a
 * second at most, by doubling or by one down).
 */
export function earlyRetries(
  requests: readonly ControllerRequest[],
  probes: readonly { atMs: number; retryAfter?: number }[],
  toleranceMs = 50,
): EarlyRetry[] {
  const key = (r: ControllerRequest): string => `${r.verb} ${r.resource} ${r.namespace}/${r.name}`;
  const early: EarlyRetry[] = [];
  requests.forEach((refused, i) => {
    if (!judgeable(refused)) return;
    const asked = probes
      .filter(
        (p) =>
          p.retryAfter !== undefined &&
          p.atMs >= refused.receivedMs - 2_500 &&
          p.atMs <= refused.receivedMs + 1_500,
      )
      .map((p) => p.retryAfter as number);
    if (asked.length === 0) return;
    const askedSeconds = Math.min(...asked);
    const again = requests.slice(i + 1).find((r) => key(r) === key(refused));
    if (again && again.receivedMs - refused.receivedMs < askedSeconds * 1000 - toleranceMs) {
      early.push({ refused, again, askedSeconds });
    }
  });
  return early;
}

/** Requests a second over `[fromMs, toMs)`: the mean, and the busiest whole second. */
export function requestRate(
  requests: readonly ControllerRequest[],
  fromMs: number,
  toMs: number,
): { count: number; perSecond: number; peakSecond: number } {
  const inside = requests.filter((r) => r.receivedMs >= fromMs && r.receivedMs < toMs);
  const bySecond = new Map<number, number>();
  for (const r of inside) {
    const s = Math.floor((r.receivedMs - fromMs) / 1000);
    bySecond.set(s, (bySecond.get(s) ?? 0) + 1);
  }
  return {
    count: inside.length,
    perSecond: inside.length / ((toMs - fromMs) / 1000),
    peakSecond: Math.max(0, ...bySecond.values()),
  };
}
