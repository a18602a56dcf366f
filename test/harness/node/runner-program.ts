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

async function admin<T>(base: string, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${base}/_sim/${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} /_sim/${path}: ${res.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

function numberIn(displayName: string, key: string): number | undefined {
  const match = new RegExp(`(?:^|\\s)${key}=(\\d+(?:\\.\\d+)?)(?:\\s|$)`).exec(displayName);
  return match ? Number(match[1]) : undefined;
}

async function main(): Promise<number> {
  const { runnerName, simulatorUrl } = readJitConfig();
  const runner = encodeURIComponent(runnerName);
  let currentJob: string | null = null;
  // The kubelet stops a deleted pod with SIGTERM; a runner then reports itself gone (143 mid-job, as the
  // shell convention for a SIGTERM death) so the service does not wait for it.
  process.on('SIGTERM', () => {
    log('SIGTERM', { runner: runnerName, job: currentJob });
    const code = currentJob ? 143 : 0;
    void admin(simulatorUrl, 'POST', `runners/${runner}/exit`, { exitCode: code })
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
    jobId = (await admin<RunnerState>(simulatorUrl, 'GET', `runners/${runner}`)).jobId;
    if (jobId) break;
    await sleep(250);
  }
  if (!jobId) {
    log('no job came; exiting', { runner: runnerName });
    await admin(simulatorUrl, 'POST', `runners/${runner}/exit`, { exitCode: 0 });
    return 0;
  }
  currentJob = jobId;
  const job = await admin<JobState>(simulatorUrl, 'GET', `jobs/${encodeURIComponent(jobId)}`);
  // A job the service did not start by itself is started by the runner, as the real runner does.
  if (job.state !== 'running') await admin(simulatorUrl, 'POST', `runners/${runner}/start`, {});
  const seconds = numberIn(job.displayName, 'sleep') ?? Number(process.env.RUNNER_JOB_SECONDS ?? 3);
  const exitCode = numberIn(job.displayName, 'exit');
  const fail = /(?:^|\s)fail(?:\s|$)/.test(job.displayName);
  log('running job', { runner: runnerName, job: jobId, seconds, exitCode, fail });

  if (exitCode !== undefined) {
    await sleep((seconds * 1000) / 2);
    log('crashing mid-job, as the job asked', { runner: runnerName, job: jobId, exitCode });
    await admin(simulatorUrl, 'POST', `runners/${runner}/exit`, { exitCode });
    return exitCode;
  }
  await sleep(seconds * 1000);
  const now = await admin<JobState>(simulatorUrl, 'GET', `jobs/${encodeURIComponent(jobId)}`);
  if (now.state === 'running') {
    await admin(simulatorUrl, 'POST', `jobs/${encodeURIComponent(jobId)}/complete`, {
      result: fail ? 'failed' : 'succeeded',
    });
  }
  await admin(simulatorUrl, 'POST', `runners/${runner}/exit`, { exitCode: 0 });
  currentJob = null;
  log('job done; exiting 0', { runner: runnerName, job: jobId, result: fail ? 'failed' : 'succeeded' });
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    log('runner failed', { error: (err as Error).message });
    process.exit(1);
  },
);
