import { setTimeout as sleep } from 'node:timers/promises';
import { ControlPlane } from '../../harness/control-plane';
import { CRD_PATHS } from '../../harness/global-setup';
import {
  CONTROLLER_NAMESPACE,
  installProductOnNode,
  waitUntil,
  type ProductOnNode,
} from '../../harness/node/product-on-node';
import { scaled } from '../../harness/time-scale';
import { describeOnRealNode } from './availability';
import { auditFlushed, controllerRequests } from './partition';
import { enqueue, waitForJobs, waitForReadyControllers, waitUntilNothingLeft } from './product-state';
import {
  allowProbe,
  earlyRetries,
  holdTheSeat,
  judgeable,
  probe,
  requestRate,
  startShedding,
  stopShedding,
} from './shedding';

jest.setTimeout(scaled(600_000));
const INSTALL_TIMEOUT_MS = scaled(1_800_000);

/*
 * The apiserver sheds the controller's load (API priority and fairness: a FlowSchema sends its requests
 * on pods, secrets, runners and the rest of the core and actions.github.com groups to a priority level
 * with no seats, so each is refused with 429 and a Retry-After) while jobs arrive, then recovers. What
 * must hold: the controller never sends a refused request again sooner than the apiserver asked, its
 * request rate while refused stays bounded (measured from the audit log), and once the apiserver serves
 * again every job runs, once, and nothing is left.
 */

const CONTAINER_START_MS = 60_000;
/** How long the apiserver sheds: long enough for its Retry-After to grow past a second. */
const SHED_MS = 30_000;
/** The longest Retry-After API priority and fairness gives out. */
const MAX_RETRY_AFTER_MS = 32_000;

describeOnRealNode('The controller against an apiserver that sheds load (real node)', () => {
  let plane: ControlPlane;
  let product: ProductOnNode;
  let serviceAccount = { namespace: CONTROLLER_NAMESPACE, name: '' };
  const log = (line: string): void => void process.stderr.write(`[shedding] ${line}\n`);

  beforeAll(async () => {
    plane = await ControlPlane.start({
      crdPaths: CRD_PATHS,
      node: true,
      handleSignals: true,
      auditLog: true,
      log,
    });
    product = await installProductOnNode(plane, { maxRunners: 10, log });
    const deployment = product.controllerManifests.find((m) => m.kind === 'Deployment') as
      { spec?: { template?: { spec?: { serviceAccountName?: string } } } } | undefined;
    serviceAccount = {
      namespace: CONTROLLER_NAMESPACE,
      name: deployment?.spec?.template?.spec?.serviceAccountName ?? '',
    };
  }, INSTALL_TIMEOUT_MS);

  afterAll(async () => {
    if (product) await stopShedding(product.kubeConfig).catch(() => undefined);
    await product?.stop();
    await plane?.stop();
  });

  it('backs off as the apiserver asks while it sheds, with a bounded request rate, and converges once it recovers', async () => {
    const kc = product.kubeConfig;
    await waitForReadyControllers(kc, 3 * CONTAINER_START_MS);
    const baselineFrom = Date.now();
    await sleep(10_000);

    await allowProbe(kc);
    await startShedding(kc, serviceAccount);
    const seat = await holdTheSeat(kc, SHED_MS + 15_000);
    const probes: { atMs: number; status: number; retryAfter?: number }[] = [];
    await waitUntil('the apiserver to shed (the probe refused)', 30_000, async () => {
      const p = await probe(kc);
      probes.push(p);
      return p.status === 429 ? true : `probe answered ${p.status}`;
    });
    const shedFrom = Date.now();
    log('the apiserver sheds the controller');
    // Runners only the controller can make, while every request it makes to make them is refused.
    const ids = enqueue(product, 6, 'sleep=2');
    while (Date.now() < shedFrom + SHED_MS) {
      probes.push(await probe(kc));
      await sleep(1_000);
    }
    await stopShedding(kc);
    seat.release();
    await waitUntil('the apiserver to serve the probe again', 30_000, async () => {
      const p = await probe(kc);
      probes.push(p);
      return p.status !== 429 ? true : `probe refused, Retry-After ${p.retryAfter}`;
    });
    const recoveredAt = Date.now();
    log(`the apiserver serves again after ${((recoveredAt - shedFrom) / 1000).toFixed(1)} s`);

    // A client waiting out the longest Retry-After it was given comes back within it.
    await waitForJobs(
      product,
      'the jobs enqueued while shedding',
      ids,
      MAX_RETRY_AFTER_MS + 3 * CONTAINER_START_MS,
    );
    const convergedMs = Date.now() - recoveredAt;
    await waitUntilNothingLeft(product);

    await auditFlushed(kc, plane.info.auditLogPath ?? '');
    const requests = (
      await controllerRequests(
        plane.info.auditLogPath ?? '',
        `system:serviceaccount:${serviceAccount.namespace}:${serviceAccount.name}`,
      )
    ).filter((r) => r.resource !== 'leases');
    const refused = requests.filter((r) => r.code === 429 && r.receivedMs >= shedFrom);
    const baseline = requestRate(requests, baselineFrom, baselineFrom + 10_000);
    const shed = requestRate(requests, shedFrom, recoveredAt);
    const asked = probes.flatMap((p) => (p.retryAfter === undefined ? [] : [p.retryAfter]));
    const early = earlyRetries(requests, probes);
    log(
      `controller requests (Leases aside): idle ${baseline.perSecond.toFixed(2)}/s; while shedding ` +
        `${shed.count} in ${((recoveredAt - shedFrom) / 1000).toFixed(0)} s = ${shed.perSecond.toFixed(2)}/s ` +
        `(busiest second ${shed.peakSecond}), ${refused.length} refused (${refused.filter(judgeable).length} ` +
        `judged); Retry-After given out ` +
        `${Math.min(...asked)}-${Math.max(...asked)} s; jobs done ${(convergedMs / 1000).toFixed(1)} s after ` +
        `the apiserver recovered; sent again too soon: ${early.length}`,
    );
    for (const e of early.slice(0, 10)) {
      log(
        `too soon: ${e.refused.verb} ${e.refused.resource} ${e.refused.namespace}/${e.refused.name} refused at ` +
          `${new Date(e.refused.receivedMs).toISOString()} (asked ${e.askedSeconds} s), again ` +
          `${e.again.receivedMs - e.refused.receivedMs} ms later`,
      );
    }

    // The shedding reached the controller, on requests whose next attempt can be told apart.
    expect(refused.filter(judgeable).length).toBeGreaterThan(0);
    // No refused request came back before the apiserver's Retry-After...
    expect(early.map((e) => `${e.refused.verb} ${e.refused.resource} ${e.refused.name}`)).toEqual([]);
    // ...so none came more than once a second: the rate is bounded by the requests it has to make.
    const perKey = new Map<string, number>();
    for (const r of refused.filter(judgeable)) {
      const k = `${r.verb} ${r.resource} ${r.namespace}/${r.name}`;
      perKey.set(k, (perKey.get(k) ?? 0) + 1);
    }
    expect(Math.max(...perKey.values())).toBeLessThanOrEqual(Math.ceil((recoveredAt - shedFrom) / 1000));
    const jobs = ids.map((id) => product.simulator.job(id));
    expect(jobs.map((j) => `${j?.state} ${j?.result} ${j?.startAttempts}`)).toEqual(
      ids.map(() => 'completed succeeded 1'),
    );
    expect(new Set(jobs.map((j) => j?.runnerName)).size).toBe(ids.length);
  });
});
