import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { KubeConfig } from '@kubernetes/client-node';
import { NODE_NETWORK } from '../../harness/node/node-files';
import type { RealNode } from '../../harness/node/real-node';
import { waitUntil } from '../../harness/node/product-on-node';
import { kubeRequest } from '../../harness/rest';

/*
 * What the partition scenarios do to a pod's network and read back: the cut itself (iptables in the
 * node's network namespace, the pod's process untouched), a counter of the requests the pod sends to the
 * Actions service (the simulator), and the apiserver's audit log attributed to pods (a bound
 * service-account token names its pod in the audit event's user.extra).
 */

const APISERVER = `${NODE_NETWORK.apiserverServiceIp}/32`;
const APISERVER_PORT = String(NODE_NETWORK.apiserverServicePort);

/**
 * Both directions between the pod and the apiserver, dropped where neither end gets an error: the pod's
 * packets as they arrive in the node's namespace (where the apiserver's relay listens), the relay's
 * answers as they leave it. The pod's kernel keeps its connections and retransmits into the void, as
 * across a real partition; nothing else of the pod (probes, the Actions service) is touched.
 */
function cutRules(podIp: string): string[][] {
  return [
    ['INPUT', '-s', `${podIp}/32`, '-d', APISERVER, '-p', 'tcp', '--dport', APISERVER_PORT, '-j', 'DROP'],
    ['OUTPUT', '-s', APISERVER, '-d', `${podIp}/32`, '-p', 'tcp', '--sport', APISERVER_PORT, '-j', 'DROP'],
  ];
}

/** Cuts the pod off the apiserver; the returned function heals the cut (idempotent). */
export async function cutFromApiserver(node: RealNode, podIp: string): Promise<() => Promise<void>> {
  for (const rule of cutRules(podIp)) await node.exec(['iptables', '-I', ...rule]);
  let healed = false;
  return async () => {
    if (healed) return;
    healed = true;
    for (const rule of cutRules(podIp)) await node.exec(['iptables', '-D', ...rule]);
  };
}

/**
 * Counts the packets carrying data that a pod sends to the simulator (its Actions and GitHub calls):
 * longer than the 52 bytes of an IPv4 + TCP header with timestamps, so ACKs and keep-alive probes are not
 * counted. A counting rule with no target, removed by `remove()`.
 */
export class ActionsCallCounter {
  private readonly rule: string[];

  constructor(
    private readonly node: RealNode,
    podIp: string,
    simulatorPort: number,
  ) {
    this.rule = [
      'INPUT',
      '-s',
      `${podIp}/32`,
      '-d',
      `${NODE_NETWORK.nodeIp}/32`,
      '-p',
      'tcp',
      '--dport',
      String(simulatorPort),
      '-m',
      'length',
      '--length',
      '53:65535',
    ];
  }

  async install(): Promise<void> {
    await this.node.exec(['iptables', '-I', ...this.rule]);
  }

  async read(): Promise<number> {
    const out = await this.node.exec(['iptables', '-L', 'INPUT', '-v', '-x', '-n']);
    const port = this.rule[this.rule.indexOf('--dport') + 1];
    const line = out.split('\n').find((l) => l.includes(`dpt:${port}`) && l.includes('length 53:65535'));
    if (!line) throw new Error(`the counting rule for port ${port} is gone:\n${out}`);
    return Number(line.trim().split(/\s+/)[0]);
  }

  async remove(): Promise<void> {
    await this.node.exec(['iptables', '-D', ...this.rule]);
  }
}

/** One request of the controller's service account, as the audit log recorded it. */
export interface ControllerRequest {
  /** The pod whose bound token made it. */
  pod: string;
  verb: string;
  /** `resource[/subresource]`. */
  resource: string;
  namespace: string;
  name: string;
  code: number;
  /** When the apiserver received it (ms since the epoch; the host's clock, as the pods'). */
  receivedMs: number;
}

const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

export function isWrite(r: ControllerRequest): boolean {
  return WRITE_VERBS.has(r.verb);
}

/** Every completed request `username` made, from the audit log, in the order logged. */
export async function controllerRequests(
  auditLogPath: string,
  username: string,
): Promise<ControllerRequest[]> {
  const out: ControllerRequest[] = [];
  const rl = createInterface({ input: createReadStream(auditLogPath) });
  for await (const line of rl) {
    if (!line.includes(`"username":"${username}"`)) continue;
    const e = JSON.parse(line) as {
      stage: string;
      verb: string;
      user: { username: string; extra?: Record<string, string[]> };
      objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
      responseStatus?: { code?: number };
      requestReceivedTimestamp: string;
    };
    if (e.stage !== 'ResponseComplete' || e.user.username !== username) continue;
    const ref = e.objectRef;
    out.push({
      pod: e.user.extra?.['authentication.kubernetes.io/pod-name']?.[0] ?? '',
      verb: e.verb,
      resource: `${ref?.resource ?? '(non-resource)'}${ref?.subresource ? `/${ref.subresource}` : ''}`,
      namespace: ref?.namespace ?? '',
      name: ref?.name ?? '',
      code: e.responseStatus?.code ?? 0,
      receivedMs: Date.parse(e.requestReceivedTimestamp),
    });
  }
  return out;
}

/**
 * Waits until the audit log holds everything answered up to now: the apiserver writes it in batches, so
 * this reads a ConfigMap no one else names and waits for that read to appear.
 */
export async function auditFlushed(kc: KubeConfig, auditLogPath: string): Promise<void> {
  const marker = `audit-marker-${Date.now()}`;
  await kubeRequest(kc, { path: `/api/v1/namespaces/default/configmaps/${marker}`, timeoutMs: 10_000 });
  await waitUntil('the audit log to catch up', 60_000, async () => {
    const rl = createInterface({ input: createReadStream(auditLogPath) });
    for await (const line of rl) if (line.includes(marker) && line.includes('ResponseComplete')) return true;
    return `no ${marker} yet`;
  });
}

/**
 * When the pod's manager container logged `text` (the container runtime's timestamp of each line, in ms),
 * over every container the pod has had: read from the pod's log files inside the node.
 */
export async function loggedAt(
  node: RealNode,
  namespace: string,
  pod: string,
  text: string,
): Promise<number[]> {
  const out = await node.exec([
    'sh',
    '-c',
    `cat /var/log/pods/${namespace}_${pod}_*/manager/*.log 2>/dev/null | grep -F '${text}' | cut -d' ' -f1 || true`,
  ]);
  return out
    .split('\n')
    .filter(Boolean)
    .map((t) => Date.parse(t))
    .sort((a, b) => a - b);
}
