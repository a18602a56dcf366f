import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { V1Lease } from '@kubernetes/client-node';
import { KubeClient, LeaseKind, isNotFound } from '@aro/kube';
import { controlPlaneInfo, testKubeConfig } from './context';
import { ManagedProcess, type ProcessExit } from './processes';
import { freePort } from './ports';
import { waitFor } from './wait-for';

const repoRoot = resolve(__dirname, '..', '..');

export interface ControllerProcessOptions {
  /** The controller's namespace (POD_NAMESPACE): its Lease and the listener pods live there. */
  namespace: string;
  /** Environment on top of the defaults below (LEASE_*, WATCH_NAMESPACE, ...). */
  env?: Record<string, string>;
}

/**
 * The controller app (apps/controller/src/main.ts, from source through @swc-node/register, as the
 * listener player runs the listener) as an OS process of its own, against the test control plane, so
 * a test can SIGKILL it at any moment and start another: what a node loss or an OOM kill does to a
 * replica. Each start is a new "pod" (POD_NAME `<prefix>-<n>`), so a replacement must win the Lease
 * from the dead holder by waiting out its lease, as in a cluster. Output goes to one log file per start.
 */
export class ControllerProcess {
  private process: ManagedProcess | undefined;
  private starts = 0;
  private readonly dir = mkdtempSync(join(tmpdir(), 'aro-controller-process-'));
  private readonly kube = new KubeClient(testKubeConfig());
  /** Every start's pod name and how it ended, for a failing test's message. */
  readonly history: Array<{ pod: string; logFile: string; exit?: ProcessExit }> = [];

  constructor(private readonly o: ControllerProcessOptions) {}

  /** The Lease's name: LEADER_ELECTION_ID as configured. */
  get leaseName(): string {
    return this.o.env?.LEADER_ELECTION_ID ?? 'aro-controller';
  }

  get pod(): string | undefined {
    return this.running ? this.history.at(-1)?.pod : undefined;
  }

  get running(): boolean {
    return this.process?.running ?? false;
  }

  /** Starts a new replica, with `env` on top of the options' for this one; the previous one must have ended. */
  async start(env: Record<string, string> = {}): Promise<void> {
    if (this.running) throw new Error(`controller ${this.pod} is still running`);
    const pod = `aro-controller-${++this.starts}`;
    const logFile = join(this.dir, `${pod}.log`);
    const entry: { pod: string; logFile: string; exit?: ProcessExit } = { pod, logFile };
    this.history.push(entry);
    const started = await ManagedProcess.start({
      name: pod,
      binary: process.execPath,
      args: ['-r', '@swc-node/register', join(repoRoot, 'apps', 'controller', 'src', 'main.ts')],
      logFile,
      env: {
        ...process.env,
        KUBECONFIG: process.env.ARO_TEST_KUBECONFIG ?? controlPlaneInfo().kubeconfigPath,
        POD_NAME: pod,
        POD_NAMESPACE: this.o.namespace,
        PROBE_PORT: String(await freePort()),
        PROBE_BIND_ADDRESS: '127.0.0.1',
        LEADER_ELECTION: 'true',
        LOG_FORMAT: 'text',
        // The image listener pods get; the listener player runs the listener from source whatever it says.
        CONTROLLER_MANAGER_CONTAINER_IMAGE: 'aro:test',
        ...this.o.env,
        ...env,
      },
    });
    void started.exited.then((exit) => (entry.exit = exit));
    this.process = started;
  }

  /** Waits until this replica holds the Lease (after a SIGKILL: once the dead holder's lease ran out). */
  async waitLeading(timeoutMs = 90_000): Promise<void> {
    const pod = this.pod;
    if (!pod) throw new Error('no controller process is running');
    await waitFor(
      async () => {
        if (!this.running) throw new Error(`controller ${pod} exited:\n${this.tail()}`);
        return (await this.lease())?.spec?.holderIdentity?.startsWith(`${pod}_`);
      },
      { description: `controller ${pod} to take the Lease ${this.o.namespace}/${this.leaseName}`, timeoutMs },
    );
  }

  /** SIGKILL: no shutdown, no Lease release, no request finished; resolves once the process is gone. */
  async kill(): Promise<void> {
    if (!this.process?.running) return;
    this.process.killNow();
    await this.process.exited;
  }

  /** SIGTERM (a graceful shutdown), SIGKILL after 30 s. */
  async stop(): Promise<void> {
    await this.process?.stop(30_000);
  }

  /** Stops the replica and removes the logs. */
  async close(): Promise<void> {
    await this.stop();
    this.kube.close();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** The last lines of the current (or last) replica's log. */
  tail(lines = 40): string {
    const last = this.history.at(-1);
    return last ? `--- ${last.pod} ---\n${this.process?.logTail(lines) ?? ''}` : '(never started)';
  }

  /** Every replica's log lines matching `pattern`, prefixed with the replica's name. */
  grep(pattern: RegExp): string[] {
    return this.history.flatMap((h) => {
      let text: string;
      try {
        text = readFileSync(h.logFile, 'utf8');
      } catch {
        return [];
      }
      return text
        .split('\n')
        .filter((l) => pattern.test(l))
        .map((l) => `${h.pod}: ${l}`);
    });
  }

  private async lease(): Promise<V1Lease | undefined> {
    try {
      return await this.kube.get<V1Lease>(LeaseKind, this.o.namespace, this.leaseName);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}
