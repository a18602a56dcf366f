import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ManagedProcess, type ProcessExit } from './processes';

/** The control-plane processes a test can restart: etcd, kube-apiserver, kube-controller-manager. */
export type ControlPlaneMemberName = 'etcd' | 'kube-apiserver' | 'kube-controller-manager';

/** How a member was started and how to tell it serves: what starting it again repeats. */
export interface MemberRecipe {
  name: ControlPlaneMemberName;
  binary: string;
  args: readonly string[];
  /** One readiness probe (etcd's /health, the apiserver's /healthz); false or a throw: not yet. */
  ready: () => Promise<boolean>;
}

/** Where a member's files live, shared by every member of one control plane. */
export interface MemberFolder {
  runDir: string;
  /** The reaper's list of process groups: a member started again is added to it. */
  pidFile: string;
  attachOutput: boolean;
  startTimeoutMs: number;
}

/**
 * One process of the control plane that can be killed and started again with the same command line:
 * the same data folder, ports and certificates, so every client reconnects to the address it knows
 * and finds what it left (a real cluster's apiserver or etcd restarted in place by its kubelet).
 */
export class ControlPlaneMember {
  constructor(
    private readonly recipe: MemberRecipe,
    private current: ManagedProcess,
    private readonly folder: MemberFolder,
  ) {}

  get name(): ControlPlaneMemberName {
    return this.recipe.name;
  }

  get process(): ManagedProcess {
    return this.current;
  }

  /**
   * Ends the process with `signal` (SIGKILL: a crash; SIGTERM: a graceful stop, SIGKILL after
   * `graceMs`) and resolves once it is gone.
   */
  async kill(signal: 'SIGKILL' | 'SIGTERM', graceMs: number): Promise<ProcessExit | undefined> {
    await this.current.stop(graceMs, signal);
    return this.current.exitStatusOrUndefined;
  }

  /**
   * Starts the process again (it must have exited) and resolves once it serves. A port another process
   * took in the meantime, or any other failure to serve within the start timeout, throws with the
   * end of its log; the member then stays down.
   */
  async startAgain(): Promise<ManagedProcess> {
    if (this.current.running) {
      throw new Error(`${this.name} (pid ${this.current.pid}) is still running; kill it first`);
    }
    const started = await ManagedProcess.start({
      name: this.name,
      binary: this.recipe.binary,
      args: this.recipe.args,
      // The same log file, appended to: one file tells the member's whole life.
      logFile: join(this.folder.runDir, `${this.name}.log`),
      attachOutput: this.folder.attachOutput,
      pidFile: this.folder.pidFile,
    });
    this.current = started;
    const deadline = Date.now() + this.folder.startTimeoutMs;
    while (Date.now() < deadline) {
      if (!started.running) {
        const exit = started.exitStatusOrUndefined;
        throw new Error(
          `${this.name} exited (code ${exit?.code}, signal ${exit?.signal}) on its restart:\n${started.logTail(20)}`,
        );
      }
      if (await this.recipe.ready().catch(() => false)) return started;
      await sleep(100);
    }
    await started.stop(5_000);
    throw new Error(
      `${this.name} did not serve within ${this.folder.startTimeoutMs} ms of its restart:\n${started.logTail(20)}`,
    );
  }
}
