import { existsSync } from 'node:fs';
import type { V1Pod } from '@kubernetes/client-node';
import { ControlPlane } from '../harness/control-plane';
import { CRD_PATHS } from '../harness/global-setup';
import { leftoverProcesses } from '../harness/node/host-state';
import {
  CONTROLLER_NAMESPACE,
  RUNNER_NAMESPACE,
  SCALE_SET_RELEASE,
  installProductOnNode,
  listPods,
  waitUntil,
  type ProductOnNode,
} from '../harness/node/product-on-node';
import { kubeRequest } from '../harness/rest';
import type { SandboxOptions } from './options';
import type { SandboxReport } from './report';
import type { SandboxIo } from './sandbox';
import { percentile } from './stats';
import { Workload } from './workload';

/*
 * `npm run sandbox -- --real-node`: the default workload on a real node (test/harness/node) instead of
 * the players: the controller replicas, the listener and every runner are containers of the images built
 * from this checkout, run by a kubelet. Prints the node's pods mid-run (`kubectl get pods -o wide`), the
 * node's and the images' build times, and the same summary as the played sandbox.
 */

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** `kubectl get pods -A -o wide`, from the API, so it needs no kubectl on the machine. */
export function podsWide(pods: readonly V1Pod[]): string {
  const now = Date.now();
  const rows = pods.map((p) => {
    const statuses = p.status?.containerStatuses ?? [];
    const ready = `${statuses.filter((c) => c.ready).length}/${p.spec?.containers.length ?? 0}`;
    const waiting = statuses.find((c) => c.state?.waiting)?.state?.waiting?.reason;
    const terminated = statuses.find((c) => c.state?.terminated)?.state?.terminated?.reason;
    const status = p.metadata?.deletionTimestamp
      ? 'Terminating'
      : (waiting ?? terminated ?? p.status?.phase ?? '');
    const restarts = String(statuses.reduce((n, c) => n + (c.restartCount ?? 0), 0));
    const created = p.metadata?.creationTimestamp ? new Date(p.metadata.creationTimestamp).getTime() : now;
    const age = `${Math.max(0, Math.round((now - created) / 1000))}s`;
    return [
      p.metadata?.namespace ?? '',
      p.metadata?.name ?? '',
      ready,
      status,
      restarts,
      age,
      p.status?.podIP ?? '<none>',
      p.spec?.nodeName ?? '<none>',
    ];
  });
  const header = ['NAMESPACE', 'NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE', 'IP', 'NODE'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  return [header, ...rows]
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i]))
        .join('   ')
        .trimEnd(),
    )
    .join('\n');
}

async function allPods(product: ProductOnNode): Promise<V1Pod[]> {
  return [
    ...(await listPods(product.kubeConfig, CONTROLLER_NAMESPACE)),
    ...(await listPods(product.kubeConfig, RUNNER_NAMESPACE)),
  ];
}

/** The runners' secrets still there, `Secret/namespace/name`: what the report lists as left. */
async function runnerSecretsLeft(product: ProductOnNode): Promise<string[]> {
  const res = await kubeRequest(product.kubeConfig, {
    path: `/api/v1/namespaces/${RUNNER_NAMESPACE}/secrets`,
    timeoutMs: 10_000,
  });
  const items =
    (res.body as { items?: { metadata: { name?: string; ownerReferences?: { kind: string }[] } }[] }).items ??
    [];
  return items
    .filter((s) => s.metadata.ownerReferences?.some((o) => o.kind === 'EphemeralRunner'))
    .map((s) => `Secret/${RUNNER_NAMESPACE}/${s.metadata.name ?? ''}`);
}

export async function runRealNodeSandbox(options: SandboxOptions, io: SandboxIo): Promise<SandboxReport> {
  const say = (line: string): void => void io.out.write(`${line}\n`);
  say(
    `ARO sandbox on a real node: ${options.jobs} jobs at ${options.rate}/s, runners ${options.minRunners}..${options.maxRunners}, ${options.duration} s each`,
  );
  const began = Date.now();
  const plane = await ControlPlane.start({
    crdPaths: CRD_PATHS,
    node: true,
    log: (l) => say(`[control-plane] ${l}`),
  });
  const node = plane.node;
  if (!node) throw new Error('the control plane started without its node');
  const pids = [...plane.processes.map((p) => p.pid), ...node.pids];
  const folders = [plane.info.runDir];
  let product: ProductOnNode | undefined;
  try {
    product = await installProductOnNode(plane, {
      minRunners: options.minRunners,
      maxRunners: options.maxRunners,
      runnerEnv: { RUNNER_JOB_SECONDS: String(options.duration) },
      log: (l) => say(`[product] ${l}`),
    });
    const workloadBegan = Date.now();
    const workload = new Workload({
      sim: product.simulator,
      jobs: options.jobs,
      rate: options.rate,
      waveSeconds: options.waveSeconds,
      labels: [SCALE_SET_RELEASE],
      scaleSetId: product.scaleSetId,
    });
    workload.start();
    const deadline = Date.now() + options.timeoutSeconds * 1000;
    let shown = false;
    let lastLine = '';
    while (Date.now() < deadline && !io.signal.aborted) {
      const jobs = workload.jobIds.map((id) => product!.simulator.job(id));
      const done = jobs.filter((j) => j?.state === 'completed').length;
      const running = jobs.filter((j) => j?.state === 'running').length;
      const line = `queued ${workload.jobIds.length}/${options.jobs}, running ${running}, done ${done}`;
      if (line !== lastLine) say(line);
      lastLine = line;
      // The node's pods once most runners are up: what a person would look at with kubectl.
      if (!shown && running >= Math.min(options.maxRunners, options.jobs) / 2) {
        say(`\n$ kubectl get pods -A -o wide\n${podsWide(await allPods(product))}\n`);
        shown = true;
      }
      if (workload.queuedAll && done === options.jobs) break;
      await sleep(1_000);
    }
    workload.stop();
    const wallMs = Date.now() - workloadBegan;
    const jobs = workload.jobIds.map((id) => product!.simulator.job(id)).filter((j) => j !== undefined);
    const succeeded = jobs.filter((j) => j.state === 'completed' && j.result === 'succeeded').length;
    const failed = jobs.filter((j) => j.state === 'completed' && j.result !== 'succeeded').length;
    const waits = jobs
      .filter((j) => j.runnerAssignTime && j.queueTime)
      .map((j) => new Date(j.runnerAssignTime).getTime() - new Date(j.queueTime).getTime())
      .filter((ms) => Number.isFinite(ms) && ms >= 0);

    // Uninstall the scale set as `helm uninstall` would, and wait for the controller to release it all.
    const kc = product.kubeConfig;
    for (const m of product.scaleSetManifests) {
      const plural = `${m.kind.toLowerCase()}s`;
      const base = m.apiVersion.includes('/') ? `/apis/${m.apiVersion}` : `/api/${m.apiVersion}`;
      await kubeRequest(kc, {
        method: 'DELETE',
        path: `${base}/namespaces/${m.metadata.namespace ?? RUNNER_NAMESPACE}/${plural}/${m.metadata.name}`,
        timeoutMs: 10_000,
      }).catch(() => undefined);
    }
    const p = product;
    await waitUntil('the runner namespace to empty', 120_000, async () => {
      const left =
        (await listPods(kc, RUNNER_NAMESPACE)).length +
        (await runnerSecretsLeft(p)).length +
        p.simulator.registrations({}).length;
      return left === 0 ? true : `${left} left`;
    }).catch(() => undefined);
    const podsLeftNamed = (await listPods(kc, RUNNER_NAMESPACE)).map(
      (pod) => `Pod/${RUNNER_NAMESPACE}/${pod.metadata?.name ?? ''}`,
    );
    const secretsLeftNamed = await runnerSecretsLeft(product);
    const registrationsLeft = product.simulator.registrations({}).length;
    say(
      `\nnode ${node.info.name}: Ready ${node.info.readySeconds.toFixed(1)} s after its start; images ${Object.values(node.info.images).join(', ')}`,
    );
    say(
      `image builds (when built): ${Object.entries(node.info.imageBuildSeconds)
        .map(([name, s]) => `${name} ${s} s`)
        .join(', ')}`,
    );
    say(
      `product installed and Ready in ${product.readySeconds.toFixed(1)} s; whole run ${((Date.now() - began) / 1000).toFixed(0)} s`,
    );
    await product.stop();
    await plane.stop();
    const nodeDir = node.dir;
    return {
      wallMs,
      jobs: options.jobs,
      succeeded,
      failed,
      unfinished: options.jobs - succeeded - failed,
      queueWaitP50Ms: percentile(waits, 50),
      queueWaitP95Ms: percentile(waits, 95),
      runnerLifecycleP50Ms: 0,
      runnerLifecycleP95Ms: 0,
      runnersSeen: new Set(jobs.map((j) => j.runnerName).filter(Boolean)).size,
      kubeWrites: 0,
      actionsCalls: 0,
      registrationsLeft,
      podsLeft: podsLeftNamed.length,
      secretsLeft: secretsLeftNamed.length,
      podsAndSecretsLeft: [...podsLeftNamed, ...secretsLeftNamed],
      chartObjectsLeft: [],
      identities: [],
      refusals: [],
      processesLeft: leftoverProcesses(pids, nodeDir).length,
      tempFoldersLeft: folders.filter((f) => existsSync(f)).length,
      chaos: [],
      aborted: io.signal.aborted,
      pids,
      folders,
      notMeasured: 'the pods run on the node, not as host processes the sandbox audits',
    };
  } catch (err) {
    await product?.stop().catch(() => undefined);
    await plane.stop();
    throw err;
  }
}
