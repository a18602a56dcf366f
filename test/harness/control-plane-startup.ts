import { get as httpGet, type IncomingMessage } from 'node:http';
import { get as httpsGet } from 'node:https';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RunFolder } from './control-plane-flags';
import { ManagedProcess, startReaper } from './processes';

/** A start that failed; `portRace` when a process lost a port picked free to another process. */
export class StartFailure extends Error {
  constructor(
    message: string,
    readonly portRace: boolean,
  ) {
    super(message);
  }
}

/**
 * One attempt at starting a control plane: its private run folder, the reaper that cleans up if the
 * test process dies, and the processes started so far. Any failure goes through `fail`, which stops
 * them all, removes the folder and explains the failure from the culprit's log.
 */
export class ControlPlaneStartup implements RunFolder {
  readonly started: ManagedProcess[] = [];
  /** Each started process's command line, for a restart on the same data, ports and certificates. */
  readonly commandLines = new Map<string, { binary: string; args: readonly string[] }>();
  readonly pidFile: string;

  private constructor(
    readonly began: number,
    readonly runDir: string,
    readonly pki: string,
    readonly reaper: ManagedProcess,
    readonly startTimeoutMs: number,
    readonly attachOutput: boolean,
  ) {
    this.pidFile = join(runDir, 'pids');
  }

  static async begin(startTimeoutMs: number, attachOutput: boolean): Promise<ControlPlaneStartup> {
    const began = Date.now();
    const runDir = mkdtempSync(join(tmpdir(), 'aro-control-plane-'));
    const pki = join(runDir, 'pki');
    mkdirSync(pki, { mode: 0o700 });
    const reaper = await startReaper(runDir, join(runDir, 'pids'));
    return new ControlPlaneStartup(began, runDir, pki, reaper, startTimeoutMs, attachOutput);
  }

  /** Seconds since the attempt began, for the progress lines. */
  since(): string {
    return `${((Date.now() - this.began) / 1000).toFixed(1)} s`;
  }

  async fail(message: string, culprit?: ManagedProcess): Promise<never> {
    const logs = (culprit ? [culprit] : this.started)
      .map((p) => `--- last lines of ${p.name} (${p.logFile}) ---\n${p.logTail(40)}`)
      .join('\n');
    const portRace = this.started.some((p) => /address already in use/i.test(p.logTail(200)));
    for (const p of [...this.started].reverse()) {
      await p.stop(5_000);
    }
    await this.reaper.stop(1_000);
    rmSync(this.runDir, { recursive: true, force: true });
    throw new StartFailure(`${message}\n${logs}`, portRace);
  }

  /** Polls `ready` until it holds, failing early (with the process's log) if the process exits. */
  async waitUntil(proc: ManagedProcess, description: string, ready: () => Promise<boolean>): Promise<void> {
    const deadline = Date.now() + this.startTimeoutMs;
    let lastError = '';
    while (Date.now() < deadline) {
      if (!proc.running) {
        const exit = proc.exitStatusOrUndefined;
        return this.fail(
          `${proc.name} exited (code ${exit?.code}, signal ${exit?.signal}) before ${description}`,
          proc,
        );
      }
      try {
        if (await ready()) {
          return;
        }
      } catch (err) {
        lastError = (err as Error).message;
      }
      await sleep(100);
    }
    return this.fail(
      `Timed out after ${this.startTimeoutMs} ms waiting for ${description}${lastError ? ` (last error: ${lastError})` : ''}. ` +
        'Raise KUBEBUILDER_CONTROLPLANE_START_TIMEOUT on a slow machine.',
      proc,
    );
  }

  async startProcess(name: string, binary: string, args: string[]): Promise<ManagedProcess> {
    const p = await ManagedProcess.start({
      name,
      binary,
      args,
      logFile: join(this.runDir, `${name}.log`),
      attachOutput: this.attachOutput,
      pidFile: this.pidFile,
    });
    this.started.push(p);
    this.commandLines.set(name, { binary, args });
    return p;
  }
}

/** One GET with a 5 s deadline: the status and body, for health checks of etcd and kcm. */
export function httpStatus(
  url: string,
  options: { insecure?: boolean } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const onResponse = (res: IncomingMessage): void => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    };
    const req = url.startsWith('https:')
      ? httpsGet(url, { rejectUnauthorized: !options.insecure, timeout: 5_000 }, onResponse)
      : httpGet(url, { timeout: 5_000 }, onResponse);
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
  });
}
