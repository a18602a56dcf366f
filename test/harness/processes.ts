import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeFileSync, appendFileSync, existsSync } from 'node:fs';
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface StartProcessOptions {
  /** Short name used in messages: `etcd`, `kube-apiserver`. */
  name: string;
  binary: string;
  args: readonly string[];
  /** stdout and stderr both go here, so a failed start can be explained from one file. */
  logFile: string;
  /** Also copy the output to this process's stderr (KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT=true). */
  attachOutput?: boolean;
  env?: NodeJS.ProcessEnv;
  /** Appended with the child's pid, for the reaper that cleans up if this process dies without teardown. */
  pidFile?: string;
}

/** Every child this process started and has not yet seen exit: what the exit and signal handlers kill. */
const live = new Set<ManagedProcess>();

/**
 * A control-plane process in its own process group. Its own group means a Ctrl-C in the terminal does not
 * reach it before the harness has had the chance to stop it in order (kcm before the apiserver before
 * etcd), and a stop can kill the whole group with one signal.
 */
export class ManagedProcess {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  /** Resolves when the process has exited, however that happened. */
  readonly exited: Promise<ProcessExit>;
  private exitStatus: ProcessExit | undefined;

  private constructor(options: StartProcessOptions, child: ChildProcess) {
    this.name = options.name;
    this.logFile = options.logFile;
    if (child.pid === undefined) {
      throw new Error(`Could not start ${options.name} (${options.binary}): no pid`);
    }
    this.pid = child.pid;
    this.exited = new Promise<ProcessExit>((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitStatus = { code, signal };
        live.delete(this);
        resolve(this.exitStatus);
      });
    });
  }

  static async start(options: StartProcessOptions): Promise<ManagedProcess> {
    const logFd = openSync(options.logFile, 'a');
    let child: ChildProcess;
    try {
      child = spawn(options.binary, options.args, {
        detached: true,
        env: options.env ?? process.env,
        stdio: options.attachOutput ? ['ignore', 'pipe', 'pipe'] : ['ignore', logFd, logFd],
      });
    } finally {
      // The child holds its own copy of the descriptor; the parent's is not needed past spawn.
      if (!options.attachOutput) {
        closeSync(logFd);
      }
    }
    if (options.attachOutput) {
      const tee = (chunk: Buffer): void => {
        appendFileSync(logFd, chunk);
        process.stderr.write(`[${options.name}] ${chunk.toString()}`);
      };
      child.stdout?.on('data', tee);
      child.stderr?.on('data', tee);
      // 'close' comes after the last output chunk; 'exit' may come before it.
      child.once('close', () => closeSync(logFd));
    }
    const spawnError = await new Promise<Error | undefined>((resolve) => {
      child.once('spawn', () => resolve(undefined));
      child.once('error', (err) => resolve(err));
    });
    if (spawnError) {
      throw new Error(`Could not start ${options.name} (${options.binary}): ${spawnError.message}`);
    }
    const managed = new ManagedProcess(options, child);
    live.add(managed);
    if (options.pidFile) {
      appendFileSync(options.pidFile, `${managed.pid}\n`);
    }
    // The harness must never be what keeps a test runner or the CLI alive; teardown and the exit handler
    // are what end these processes.
    child.unref();
    (child.stdout as Socket | null)?.unref();
    (child.stderr as Socket | null)?.unref();
    return managed;
  }

  get running(): boolean {
    return this.exitStatus === undefined;
  }

  get exitStatusOrUndefined(): ProcessExit | undefined {
    return this.exitStatus;
  }

  /**
   * SIGTERM to the process group (or `signal`: SIGKILL for a crash), SIGKILL once `timeoutMs` has passed;
   * resolves when the process is gone.
   */
  async stop(timeoutMs: number, signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
    if (!this.running) {
      return;
    }
    signalGroup(this.pid, signal);
    if (!(await exitsWithin(this.exited, timeoutMs))) {
      signalGroup(this.pid, 'SIGKILL');
      await exitsWithin(this.exited, 5_000);
    }
    // Anything the process itself started lives in the same group and must not outlive it.
    signalGroup(this.pid, 'SIGKILL');
  }

  /** Synchronous last resort for exit handlers, where no promise will ever resolve. */
  killNow(): void {
    signalGroup(this.pid, 'SIGKILL');
  }

  /** The last `lines` lines of the process's log, for failure messages. */
  logTail(lines = 40): string {
    return tailOfFile(this.logFile, lines);
  }
}

/**
 * Whether `exited` settles within `ms`. The timer is cancelled as soon as the process exits: a pending
 * timer would keep the event loop, and so a finished jest run, alive for the rest of the timeout.
 */
async function exitsWithin(exited: Promise<unknown>, ms: number): Promise<boolean> {
  const timer = new AbortController();
  try {
    return await Promise.race([
      exited.then(() => true),
      sleep(ms, false, { signal: timer.signal }).catch(() => false),
    ]);
  } finally {
    timer.abort();
  }
}

export function tailOfFile(path: string, lines: number): string {
  if (!existsSync(path)) {
    return '(no log file)';
  }
  const text = readFileSync(path, 'utf8').trimEnd();
  return text.split('\n').slice(-lines).join('\n');
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch (err) {
    // ESRCH: the group is already gone, which is the goal.
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') {
      throw err;
    }
  }
}

/** True while a process with this pid exists (and is not a zombie we could still reap). */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // A zombie still answers signal 0; it is dead for every purpose that matters here.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** Synchronously SIGKILLs every child still alive; used from `process.on('exit')`. */
export function killAllManagedProcessesNow(): void {
  for (const child of live) {
    child.killNow();
  }
}

/**
 * Starts a detached shell that outlives this process for one purpose: if this process dies without a
 * teardown (SIGKILL, a crashed jest worker, an OOM kill), it kills the process groups listed in `pidFile`
 * and removes `runDir`. Exit handlers cannot cover those deaths, and a leaked apiserver or etcd would hold
 * gigabytes and ports until the machine is reset. A normal teardown kills the reaper itself.
 */
export async function startReaper(runDir: string, pidFile: string): Promise<ManagedProcess> {
  writeFileSync(pidFile, '', { flag: 'a' });
  const script = [
    'parent=$1; run=$2; pids=$3',
    'while kill -0 "$parent" 2>/dev/null; do sleep 1; done',
    'for pg in $(cat "$pids" 2>/dev/null); do kill -TERM "-$pg" 2>/dev/null; done',
    'sleep 5',
    'for pg in $(cat "$pids" 2>/dev/null); do kill -KILL "-$pg" 2>/dev/null; done',
    'rm -rf "$run"',
  ].join('\n');
  return ManagedProcess.start({
    name: 'reaper',
    binary: '/bin/sh',
    args: ['-c', script, 'aro-control-plane-reaper', String(process.pid), runDir, pidFile],
    // Not inside runDir: the reaper deletes that folder and must not hold a file open in it.
    logFile: '/dev/null',
  });
}
