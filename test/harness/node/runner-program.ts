// The runner image's program (test/harness/node/build-images.sh puts it in `localhost/aro-runner`): what
// the GitHub Actions runner does with ACTIONS_RUNNER_INPUT_JITCONFIG, against the simulator. It connects
// as the runner its JIT config names, takes the one job the service assigns, runs it, reports the result
// and exits 0, so that a runner pod is a real container whose exit code the controller judges.
//
// It runs on the image's Node as it is (`node runner-program.ts`, Node 24 strips the types), so it imports
// nothing but Node's own modules and uses only erasable TypeScript.
//
// A job asks for behaviour through its display name (the simulator's `displayName`):
//   `sleep=<seconds>`  run that long (default RUNNER_JOB_SECONDS, else 3 s)
//   `exit=<code>`      crash with that exit code halfway through the job (a runner dying mid-job)
//   `fail`             the job's result is `failed`; the runner still exits 0, as a real one does
// RUNNER_JOB_WAIT_SECONDS (default 60): how long to wait for a job before exiting 0 without one.
//
// Like the real runner, it rides out a service that answers late or drops a connection: every call is
// tried again (backoff up to 5 s) for RUNNER_SERVICE_PATIENCE_SECONDS (default 300) before it gives up.
// A runner that died on one slow answer while it held a job would leave the job running on the service
// with nobody to finish it, and the registration busy for good (the service refuses to remove a runner
// with a job); in the real-node suite that is what a loaded machine did to one of 20 jobs. When it does
// give up, the reason goes to the pod's termination message, where the controller's judge and a person
// reading the pod see it.

import { writeFileSync } from 'node:fs';

interface JitConfig {
  runnerName: string;
  simulatorUrl: string;
}

interface RunnerState {
  jobId: string | null;
}

interface JobState {
  state: string;
  displayName: string;
}

const log = (message: string, fields: Record<string, unknown> = {}): void => {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), msg: message, ...fields })}\n`);
};

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function readJitConfig(): JitConfig {
  const encoded = process.env.ACTIONS_RUNNER_INPUT_JITCONFIG;
  if (!encoded) throw new Error('ACTIONS_RUNNER_INPUT_JITCONFIG is not set');
  const parsed = JSON.parse(Buffer.from(encoded, 'base64').toString('utf8')) as Partial<JitConfig>;
  if (typeof parsed.runnerName !== 'string' || typeof parsed.simulatorUrl !== 'string') {
    throw new Error('the JIT config names no runnerName or simulatorUrl');
  }
  return { runnerName: parsed.runnerName, simulatorUrl: parsed.simulatorUrl.replace(/\/+$/, '') };
}

/** An answer from the simulator: a refusal (4xx) is final, anything else is worth another try. */
class Refused extends Error {
  readonly status: number;
  constructor(message: string, status: number) {
    super(message);
    this.status = status;
  }
}

const PATIENCE_MS = Number(process.env.RUNNER_SERVICE_PATIENCE_SECONDS ?? 300) * 1000;

async function attempt<T>(base: string, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${base}/_sim/${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  const what = `${method} /_sim/${path}: ${res.status} ${text}`;
  if (res.status >= 400 && res.status < 500) throw new Refused(what, res.status);
  if (!res.ok) throw new Error(what);
  return (text ? JSON.parse(text) : undefined) as T;
}

/**
 * One call to the simulator, tried again on a timeout, a lost connection or a 5xx for `patienceMs`.
 * `landedIfRefusedOnRetry`: the call is not repeatable (completing a job, reporting the exit), so a
 * refusal that answers a retry means an earlier try landed and only its answer was lost.
 */
async function admin<T>(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  { landedIfRefusedOnRetry = false, patienceMs = PATIENCE_MS } = {},
): Promise<T | undefined> {
  const giveUpAt = Date.now() + patienceMs;
  for (let tries = 1; ; tries++) {
    try {
      return await attempt<T>(base, method, path, body);
    } catch (err) {
      if (err instanceof Refused) {
        if (landedIfRefusedOnRetry && tries > 1) return undefined;
        throw err;
      }
      if (Date.now() >= giveUpAt) throw err;
      const waitMs = Math.min(5_000, 250 * 2 ** tries);
      log('the service did not answer; trying again', {
        call: `${method} /_sim/${path}`,
        tries,
        waitMs,
        error: (err as Error).message,
      });
      await sleep(waitMs);
    }
  }
}

async function read<T>(base: string, path: string): Promise<T> {
  const answer = await admin<T>(base, 'GET', path);
  if (answer === undefined) throw new Error(`GET /_sim/${path}: an empty answer`);
  return answer;
}

/** Where the kubelet reads a container's termination message (the pod spec's default path). */
function recordTermination(message: string): void {
  try {
    writeFileSync('/dev/termination-log', message.slice(0, 4000));
  } catch {
    // Not in a pod (or no such file): stdout has it too.
  }
}

function numberIn(displayName: string, key: string): number | undefined {
  const match = new RegExp(`(?:^|\\s)${key}=(\\d+(?:\\.\\d+)?)(?:\\s|$)`).exec(displayName);
  return match ? Number(match[1]) : undefined;
}

/** Reporting the exit (or a job's end) twice is refused the second time: a refused retry landed. */
const reportOnce = { landedIfRefusedOnRetry: true };

async function main(): Promise<number> {
  const { runnerName, simulatorUrl } = readJitConfig();
  const runner = encodeURIComponent(runnerName);
  let currentJob: string | null = null;
  // The kubelet stops a deleted pod with SIGTERM; a runner then reports itself gone (143 mid-job, as the
  // shell convention for a SIGTERM death) so the service does not wait for it.
  process.on('SIGTERM', () => {
    log('SIGTERM', { runner: runnerName, job: currentJob });
    const code = currentJob ? 143 : 0;
    // Within the pod's grace period (30 s by default), after which the kubelet kills it anyway.
    void admin(
      simulatorUrl,
      'POST',
      `runners/${runner}/exit`,
      { exitCode: code },
      { landedIfRefusedOnRetry: true, patienceMs: 20_000 },
    )
      .catch(() => undefined)
      .finally(() => process.exit(code));
  });

  try {
    await admin(simulatorUrl, 'POST', `runners/${runner}/connect`);
  } catch (err) {
    // No registration to connect to (removed before the runner started): a real runner fails to start.
    log('could not connect', { runner: runnerName, error: (err as Error).message });
    return 1;
  }
  log('connected', { runner: runnerName, simulator: simulatorUrl });

  const waitUntil = Date.now() + Number(process.env.RUNNER_JOB_WAIT_SECONDS ?? 60) * 1000;
  let jobId: string | null = null;
  while (Date.now() < waitUntil) {
    jobId = (await read<RunnerState>(simulatorUrl, `runners/${runner}`)).jobId;
    if (jobId) break;
    await sleep(250);
  }
  if (!jobId) {
    log('no job came; exiting', { runner: runnerName });
    await admin(simulatorUrl, 'POST', `runners/${runner}/exit`, { exitCode: 0 }, reportOnce);
    return 0;
  }
  currentJob = jobId;
  const job = await read<JobState>(simulatorUrl, `jobs/${encodeURIComponent(jobId)}`);
  // A job the service did not start by itself is started by the runner, as the real runner does.
  if (job.state !== 'running') await admin(simulatorUrl, 'POST', `runners/${runner}/start`, {});
  const seconds = numberIn(job.displayName, 'sleep') ?? Number(process.env.RUNNER_JOB_SECONDS ?? 3);
  const exitCode = numberIn(job.displayName, 'exit');
  const fail = /(?:^|\s)fail(?:\s|$)/.test(job.displayName);
  log('running job', { runner: runnerName, job: jobId, seconds, exitCode, fail });

  if (exitCode !== undefined) {
    await sleep((seconds * 1000) / 2);
    log('crashing mid-job, as the job asked', { runner: runnerName, job: jobId, exitCode });
    await admin(simulatorUrl, 'POST', `runners/${runner}/exit`, { exitCode }, reportOnce);
    return exitCode;
  }
  await sleep(seconds * 1000);
  const now = await read<JobState>(simulatorUrl, `jobs/${encodeURIComponent(jobId)}`);
  if (now.state === 'running') {
    await admin(
      simulatorUrl,
      'POST',
      `jobs/${encodeURIComponent(jobId)}/complete`,
      { result: fail ? 'failed' : 'succeeded' },
      reportOnce,
    );
  }
  await admin(simulatorUrl, 'POST', `runners/${runner}/exit`, { exitCode: 0 }, reportOnce);
  currentJob = null;
  log('job done; exiting 0', { runner: runnerName, job: jobId, result: fail ? 'failed' : 'succeeded' });
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    log('runner failed', { error: (err as Error).message });
    recordTermination(`runner failed: ${(err as Error).message}`);
    process.exit(1);
  },
);
