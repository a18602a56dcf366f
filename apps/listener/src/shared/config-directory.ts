import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Logger } from '@aro/observability';
import { type LoadedListenerConfig, readListenerConfigFile } from '../config';

/**
 * The configs of a shared listener: every `<key>.json` in `dir`, and every `<key>/config.json` (a config
 * Secret mounted as a directory). A file that does not read or validate is logged with its name and the
 * field, and skipped: one bad scale set never keeps the others from being served. The same bad file is
 * logged once, not on every scan.
 */
export class ConfigDirectory {
  private readonly reported = new Map<string, string>();

  constructor(
    private readonly dir: string,
    private readonly logger: Logger,
  ) {}

  read(): Map<string, LoadedListenerConfig> {
    const configs = new Map<string, LoadedListenerConfig>();
    for (const [key, path] of this.files()) {
      try {
        configs.set(key, readListenerConfigFile(path));
        this.reported.delete(path);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        if (this.reported.get(path) === message) continue;
        this.reported.set(path, message);
        this.logger.error('Skipping a scale set whose listener config is invalid', undefined, {
          key,
          path,
          error: message,
        });
      }
    }
    return configs;
  }

  private files(): Array<[string, string]> {
    const found: Array<[string, string]> = [];
    for (const name of readdirSync(this.dir).sort()) {
      if (name.startsWith('.')) continue;
      const path = join(this.dir, name);
      if (name.endsWith('.json')) found.push([basename(name, '.json'), path]);
      else if (statSync(path).isDirectory() && existsSync(join(path, 'config.json'))) {
        found.push([name, join(path, 'config.json')]);
      }
    }
    return found;
  }
}
