import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { request } from 'node:http';
import { join } from 'node:path';
import { waitFor } from '../../harness/wait-for';
import { scaled } from '../../harness/time-scale';

/*
 * The test-only fault switches (test/harness/node/fault-switches.ts) loaded the way the real-node suite
 * loads them into the controller's containers: NODE_OPTIONS=--require <file> on the pinned Node, which
 * strips the types as the image's Node does. The process under them is a small HTTP server standing in
 * for the controller's probe port: what the kubelet sees is whether it answers.
 */

const PRELOAD = join(__dirname, '../../harness/node/fault-switches.ts');
/** Answers every request; prints its port once listening. */
const SERVER = `require('node:http').createServer((q, r) => r.end('ok'))
  .listen(0, '127.0.0.1', function () { console.log(JSON.stringify({ port: this.address().port })); });`;
/** How long a healthy local server may take to answer on a loaded machine; a hung one never does. */
const ANSWER_MS = 2_000;

interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function start(faults: string | undefined): Started {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: `--require ${PRELOAD}` };
  delete env.ARO_TEST_FAULTS;
  if (faults !== undefined) env.ARO_TEST_FAULTS = faults;
  const child = spawn(process.execPath, ['-e', SERVER], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = once(child, 'exit').then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
  }));
  return { child, output: () => output, exited };
}

async function portOf(started: Started): Promise<number> {
  return waitFor(() => Number(/\{"port":(\d+)\}/.exec(started.output())?.[1] ?? 0) || undefined, {
    description: 'the server to listen (its port on stdout)',
  });
}

/** 'ok', or the error that ended the request (a timeout when nothing answers within `timeoutMs`). */
function get(port: number, timeoutMs: number): Promise<string> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/healthz', timeout: timeoutMs }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve(body));
    });
    req.on('timeout', () => req.destroy(new Error('no answer')));
    req.on('error', (err) => resolve(`error: ${err.message}`));
    req.end();
  });
}

describe('the test-only fault switches, preloaded through NODE_OPTIONS', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  });

  it('hang-on-sigusr2: SIGUSR2 leaves the process alive and answering nothing', async () => {
    const server = start('hang-on-sigusr2');
    children.push(server.child);
    const port = await portOf(server);
    expect(server.output()).toContain('TEST FAULT SWITCH armed');
    expect(await get(port, scaled(ANSWER_MS))).toBe('ok');

    server.child.kill('SIGUSR2');
    // The handler ran (its last words before blocking), so what follows is the hung loop, not a slow one.
    await waitFor(() => server.output().includes('SIGUSR2 received; the event loop now hangs'), {
      description: 'the switch to say it hangs the loop',
    });
    expect(await get(port, scaled(ANSWER_MS))).toBe('error: no answer');
    expect({ exitCode: server.child.exitCode, signal: server.child.signalCode }).toEqual({
      exitCode: null,
      signal: null,
    });
  });

  it('arms nothing unless ARO_TEST_FAULTS names a switch: SIGUSR2 then ends the process as usual', async () => {
    const server = start(undefined);
    children.push(server.child);
    const port = await portOf(server);
    expect(await get(port, scaled(ANSWER_MS))).toBe('ok');
    server.child.kill('SIGUSR2');
    expect(await server.exited).toEqual({ code: null, signal: 'SIGUSR2' });
    expect(server.output()).not.toContain('TEST FAULT');
  });

  it('refuses a switch it does not know, before the program runs', async () => {
    const server = start('hang-on-sigusr3');
    children.push(server.child);
    expect(await server.exited).toEqual({ code: 2, signal: null });
    expect(server.output()).toContain('"unknown":["hang-on-sigusr3"]');
    expect(server.output()).not.toContain('"port"');
  });
});
