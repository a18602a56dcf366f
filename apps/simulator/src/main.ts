import { createLogger, type LogFormat, type LogLevel } from '@aro/observability';
import { parseArgs } from 'node:util';
import { loadSeedFile } from './seed';
import { startSimulator } from './simulator';

/**
 * `npm run simulator [-- --port 8910 --host 127.0.0.1 --seed-file seed.json --public-url URL]`.
 * Flags win over the environment (SIMULATOR_PORT, SIMULATOR_HOST, SIMULATOR_SEED_FILE,
 * SIMULATOR_PUBLIC_URL, LOG_LEVEL, LOG_FORMAT). Runs until SIGINT/SIGTERM.
 */

const DEFAULT_PORT = 8910;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'seed-file': { type: 'string' },
      'public-url': { type: 'string' },
      'log-level': { type: 'string' },
      'log-format': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(
      'usage: npm run simulator -- [--port N] [--host H] [--seed-file F] [--public-url URL] [--log-level L] [--log-format json|text]',
    );
    return;
  }
  const level = (values['log-level'] ?? process.env.LOG_LEVEL ?? 'info') as LogLevel;
  const format = (values['log-format'] ?? process.env.LOG_FORMAT ?? 'text') as LogFormat;
  const log = createLogger({ level, format });

  const portText = values.port ?? process.env.SIMULATOR_PORT ?? String(DEFAULT_PORT);
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`invalid simulator port "${portText}"`);
  const seedFile = values['seed-file'] ?? process.env.SIMULATOR_SEED_FILE;
  const seed = seedFile ? loadSeedFile(seedFile) : undefined;

  const sim = await startSimulator({
    port,
    host: values.host ?? process.env.SIMULATOR_HOST ?? '127.0.0.1',
    seed,
    publicUrl: values['public-url'] ?? process.env.SIMULATOR_PUBLIC_URL,
    logger: log,
  });
  const defaults =
    seed?.defaults === false
      ? {}
      : {
          orgConfigUrl: sim.configUrl({ org: 'octo' }),
          repoConfigUrl: sim.configUrl({ org: 'octo', repo: 'hello' }),
          enterpriseConfigUrl: sim.configUrl({ enterprise: 'ent' }),
          pat: 'ghp_simulator',
        };
  log.info('Simulator ready', {
    url: sim.url,
    ...defaults,
    seedFile: seedFile ?? null,
    admin: `${sim.url}/_sim/state`,
  });

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log.info('Stopping simulator', { signal });
    sim.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error('Simulator did not stop cleanly', err);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
