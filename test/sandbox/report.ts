import { formatDuration, table } from './stats';

/** Who a process of the product ran as, asked of the apiserver with the kubeconfig it was given. */
export interface Identity {
  who: 'controller' | 'listener';
  user: string;
  /** Whether that user may create namespaces (an admin may; the charts grant no such right). */
  mayCreateNamespaces: boolean;
}

/** What a run ends with: the summary's figures, for the table and for the test that reads them. */
export interface SandboxReport {
  wallMs: number;
  jobs: number;
  succeeded: number;
  failed: number;
  unfinished: number;
  queueWaitP50Ms: number;
  queueWaitP95Ms: number;
  runnerLifecycleP50Ms: number;
  runnerLifecycleP95Ms: number;
  runnersSeen: number;
  kubeWrites: number;
  actionsCalls: number;
  registrationsLeft: number;
  /** Each scale set's leak audit (`status.orphanSweep`) at the end of the workload, one line per set. */
  leakAudit?: string[];
  /** Pods and secrets left in the runner and controller namespaces once the scale set is uninstalled. */
  podsLeft: number;
  secretsLeft: number;
  /** Those pods and secrets, `Kind/namespace/name`. */
  podsAndSecretsLeft: string[];
  /** Objects of the scale-set chart still there after its uninstall (`Kind/name`). */
  chartObjectsLeft: string[];
  identities: Identity[];
  /** The distinct RBAC refusals the controllers' and listeners' logs report. */
  refusals: string[];
  processesLeft: number;
  tempFoldersLeft: number;
  chaos: string[];
  aborted: boolean;
  /** Every process the run started (control plane, controllers, listeners), all gone at the end. */
  pids: number[];
  /** Every temporary folder the run made (the control plane's run folder holds the sandbox's). */
  folders: string[];
  /**
   * Why the figures only the players and the host processes' logs give (runner lifecycle, API
   * writes and calls, identities, RBAC refusals, chart objects left) were not taken: the summary says
   * so instead of printing zeros that read as measured.
   */
  notMeasured?: string;
}

function identityRow(r: SandboxReport, who: Identity['who']): string {
  const users = [...new Set(r.identities.filter((i) => i.who === who).map((i) => i.user))];
  if (users.length === 0) return '(none ran)';
  const admin = r.identities.some((i) => i.who === who && i.mayCreateNamespaces);
  return `${users.join(', ')}${admin ? ' (!!! may create namespaces)' : ''}`;
}

/** The summary table. */
export function renderReport(r: SandboxReport): string {
  const perJob = (n: number): string => (r.jobs > 0 ? (n / r.jobs).toFixed(2) : '-');
  const unmeasured = r.notMeasured === undefined ? undefined : `(not measured: ${r.notMeasured})`;
  const measured = (value: () => string): string => unmeasured ?? value();
  const rows: Array<[string, string]> = [
    ['wall time of the workload', formatDuration(r.wallMs)],
    ['jobs done (succeeded)', `${r.succeeded} of ${r.jobs}`],
    ['jobs failed', String(r.failed)],
    ['jobs unfinished', String(r.unfinished)],
    ['queue wait p50 / p95', `${formatDuration(r.queueWaitP50Ms)} / ${formatDuration(r.queueWaitP95Ms)}`],
    [
      'runner lifecycle p50 / p95',
      measured(
        () =>
          `${formatDuration(r.runnerLifecycleP50Ms)} / ${formatDuration(r.runnerLifecycleP95Ms)} (${r.runnersSeen} runners)`,
      ),
    ],
    ['Kubernetes writes per job', measured(() => `${perJob(r.kubeWrites)} (${r.kubeWrites} in all)`)],
    ['Actions calls per job', measured(() => `${perJob(r.actionsCalls)} (${r.actionsCalls} in all)`)],
    ['controllers ran as', measured(() => identityRow(r, 'controller'))],
    ['listeners ran as', measured(() => identityRow(r, 'listener'))],
    ['RBAC refusals in their logs', measured(() => String(r.refusals.length))],
    ...(r.leakAudit ?? []).map((line): [string, string] => ['leak audit at the end of the workload', line]),
    ['registrations left on the service', String(r.registrationsLeft)],
    ['pods and secrets left', `${r.podsLeft + r.secretsLeft} (${r.podsLeft} pods, ${r.secretsLeft} secrets)`],
    [
      'scale-set chart objects left',
      measured(() =>
        r.chartObjectsLeft.length === 0
          ? '0'
          : `${r.chartObjectsLeft.length} (${r.chartObjectsLeft.join(', ')})`,
      ),
    ],
    ['processes left', String(r.processesLeft)],
    ['temporary folders left', String(r.tempFoldersLeft)],
  ];
  for (const line of r.chaos) rows.push(['chaos', line.replace(/^chaos: /, '')]);
  for (const refusal of r.refusals.slice(0, 3)) {
    rows.push(['refused', refusal.length > 120 ? `${refusal.slice(0, 120)}...` : refusal]);
  }
  return `\n${table(r.aborted ? 'ARO sandbox summary (interrupted)' : 'ARO sandbox summary', rows)}\n`;
}

/** Whether a report is a clean run: what the summary's bottom rows promise. */
export function cleanRun(r: SandboxReport): boolean {
  return (
    r.failed === 0 &&
    r.unfinished === 0 &&
    r.registrationsLeft === 0 &&
    r.podsLeft + r.secretsLeft === 0 &&
    r.chartObjectsLeft.length === 0 &&
    r.refusals.length === 0 &&
    r.processesLeft === 0 &&
    r.tempFoldersLeft === 0
  );
}

export interface KeepTargets {
  kubeconfigPath: string;
  simUrl: string;
  /** The simulator's usual port, which examples/manifests name. */
  simulatorPort: number;
  controllers: Array<{ name: string; pid: number; metricsUrl: string }>;
  listenerMetrics: string[];
  lease: { namespace: string; name: string };
  workDir: string;
  /** The scale set's name: the label its jobs ask for. */
  release: string;
}

/** What `--keep` prints: where everything is, and commands to paste. */
export function keepInstructions(t: KeepTargets): string {
  const simHost = new URL(t.simUrl).host;
  return [
    '',
    'Left running (--keep). Ctrl-C stops everything and removes every temporary folder.',
    `  kubeconfig:         ${t.kubeconfigPath} (admin)`,
    `  simulator:          ${t.simUrl} (state: ${t.simUrl}/_sim/state)`,
    `  controllers:        ${t.controllers.map((c) => `${c.name} pid ${c.pid} (${c.metricsUrl})`).join(', ')}`,
    '                      (a replica killed, even with -9, is started again within seconds, as by its Deployment)',
    `  listener metrics:   ${t.listenerMetrics.join(', ') || '(no listener running)'}`,
    `  fleet page:         ${t.controllers.map((c) => c.metricsUrl.replace(/\/metrics$/, '/fleet')).join(', ')}`,
    `  logs:               ${t.workDir}/*.log, ${t.workDir}/listeners/*/listener.log`,
    '',
    'Try:',
    `  export KUBECONFIG=${t.kubeconfigPath}`,
    '  kubectl get autoscalingrunnersets,ephemeralrunnersets,ephemeralrunners,pods -n arc-runners',
    `  kubectl get lease -n ${t.lease.namespace} ${t.lease.name} -o jsonpath='{.spec.holderIdentity}{"\\n"}'`,
    new URL(t.simUrl).port === String(t.simulatorPort)
      ? '  kubectl apply -f examples/manifests/'
      : `  sed 's#127.0.0.1:${t.simulatorPort}#${simHost}#' examples/manifests/*.yaml | kubectl apply -f -   # port ${t.simulatorPort} was taken`,
    `  curl -s -X POST ${t.simUrl}/_sim/jobs -H 'content-type: application/json' -d '{"labels":["${t.release}"],"repo":"octo/hello"}'`,
    `  curl -s ${t.simUrl}/_sim/runners`,
    `  curl -s ${t.controllers[0]?.metricsUrl ?? ''} | grep -E '^(gha|aro)_'`,
    `  curl -s -X DELETE ${t.simUrl}/_sim/scalesets/<id>   # as GitHub deletes an offline scale set; ids: ${t.simUrl}/_sim/scalesets`,
    '',
  ].join('\n');
}
