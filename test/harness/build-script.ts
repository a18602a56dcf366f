import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';

/** True when `path` is a file this process may execute. */
export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs one of the harness's build scripts (the control plane, helm, the conformance program), streaming
 * its progress (stderr) to ours, and returns what it prints on its last stdout line: where the result
 * is. Every script reuses a finished build at once, so only the first run on a machine waits.
 */
export async function runBuildScript(script: string): Promise<string> {
  const child = spawn('bash', [script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  const code = await new Promise<number | null>((resolvePromise, reject) => {
    child.once('error', reject);
    child.once('close', resolvePromise);
  });
  if (code !== 0) throw new Error(`${script} exited with ${code}; its progress and errors are above`);
  return stdout.trim().split('\n').pop()?.trim() ?? '';
}
