import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/*
 * Headless Chromium (Debian's `chromium` package) for the tests that load a page as a person would:
 * one process per call, a fresh profile removed after, nothing reaching beyond loopback.
 */

/** Where chromium is, or undefined with the reason it is not usable. */
export async function findChromium(): Promise<{ path?: string; reason?: string }> {
  const path = process.env.CHROMIUM_BIN ?? 'chromium';
  try {
    const { stdout } = await run(path, ['--version'], { timeout: 30_000 });
    return { path, reason: stdout.trim() };
  } catch (err) {
    return { reason: `${path} --version failed: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/** Flags that keep the browser off every network but the page's, and its state in a throwaway profile. */
function flags(profile: string): string[] {
  return [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--disable-dev-shm-usage',
    `--user-data-dir=${profile}`,
  ];
}

async function withProfile<T>(fn: (profile: string) => Promise<T>): Promise<T> {
  const profile = mkdtempSync(join(tmpdir(), 'aro-chromium-'));
  try {
    return await fn(profile);
  } finally {
    rmSync(profile, { recursive: true, force: true });
  }
}

/** The DOM after the page loaded, as Chromium serialises it. */
export function dumpDom(chromium: string, url: string): Promise<string> {
  return withProfile(async (profile) => {
    const { stdout } = await run(chromium, [...flags(profile), '--dump-dom', url], {
      timeout: 120_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    return stdout;
  });
}

/** A PNG of the page at `width`x`height`. */
export function screenshot(
  chromium: string,
  url: string,
  file: string,
  width = 1400,
  height = 600,
): Promise<void> {
  return withProfile(async (profile) => {
    await run(
      chromium,
      [
        ...flags(profile),
        '--hide-scrollbars',
        `--window-size=${width},${height}`,
        `--screenshot=${file}`,
        url,
      ],
      { timeout: 120_000 },
    );
  });
}
