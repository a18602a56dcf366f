import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { AppSeed, SeedOptions, TimingOptions, TokenLifetimes } from './types';

export const DEFAULT_PAT = 'ghp_simulator';

export const DEFAULT_TOKEN_LIFETIMES: TokenLifetimes = {
  adminTokenSeconds: 3600,
  queueTokenSeconds: 3600,
  installationTokenSeconds: 3600,
  registrationTokenSeconds: 3600,
};

export const DEFAULT_TIMING: TimingOptions = {
  longPollTimeoutMs: 50_000,
  sessionIdleTimeoutMs: 120_000,
  jobReofferMs: 60_000,
  jobStartTimeoutMs: 0,
  maxJobStartAttempts: 3,
  sweepIntervalMs: 1_000,
  autoStartJobs: true,
  requireApiVersion: true,
};

/** The default world: enterprise `ent` owning org `octo` with repo `octo/hello`, and PAT `ghp_simulator` for all of it. */
export function defaultSeed(): Required<Pick<SeedOptions, 'enterprises' | 'orgs' | 'repos' | 'pats'>> {
  return {
    enterprises: ['ent'],
    orgs: [{ name: 'octo', enterprise: 'ent' }],
    repos: ['octo/hello'],
    pats: [{ token: DEFAULT_PAT }],
  };
}

/**
 * Reads a seed file (JSON of SeedOptions). An app may name its key by `publicKeyPath` (relative to
 * the file) instead of inlining `publicKeyPem`.
 */
export function loadSeedFile(path: string): SeedOptions {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(
      `cannot read simulator seed file ${path}: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error(`simulator seed file ${path} must hold a JSON object`);
  }
  const seed = parsed as SeedOptions;
  const apps = seed.apps as Array<Partial<AppSeed> & { publicKeyPath?: string }> | undefined;
  if (apps) {
    seed.apps = apps.map((app, i): AppSeed => {
      if (app.publicKeyPem) return app as AppSeed;
      if (!app.publicKeyPath)
        throw new Error(`seed file ${path}: apps[${i}] needs publicKeyPem or publicKeyPath`);
      const { publicKeyPath, ...rest } = app;
      return { ...rest, publicKeyPem: readFileSync(resolve(dirname(path), publicKeyPath), 'utf8') };
    });
  }
  return seed;
}
