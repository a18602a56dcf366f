import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Logger } from '@aro/observability';
import type { LoadedListenerConfig } from '../config';
import { ConfigEntries, type ConfigEntry, type ListenerConfigSource } from './config-source';

/**
 * The configs of a shared listener in a directory: every `<key>.json` in `dir`, and every
 * `<key>/config.json` (a config Secret mounted as a directory). Bad files: see ConfigEntries.
 */
export class ConfigDirectory implements ListenerConfigSource {
  private readonly entries: ConfigEntries;

  constructor(
    private readonly dir: string,
    logger: Logger,
  ) {
    this.entries = new ConfigEntries(logger);
  }

  get where(): string {
    return this.dir;
  }

  read(): Promise<Map<string, LoadedListenerConfig>> {
    return Promise.resolve(this.readNow());
  }

  readNow(): Map<string, LoadedListenerConfig> {
    return this.entries.validate(this.files());
  }

  private files(): ConfigEntry[] {
    const found: ConfigEntry[] = [];
    const entry = (key: string, path: string): ConfigEntry => ({
      key,
      source: path,
      text: () => readFileSync(path, 'utf8'),
    });
    for (const name of readdirSync(this.dir).sort()) {
      if (name.startsWith('.')) continue;
      const path = join(this.dir, name);
      if (name.endsWith('.json')) found.push(entry(basename(name, '.json'), path));
      else if (statSync(path).isDirectory() && existsSync(join(path, 'config.json'))) {
        found.push(entry(name, join(path, 'config.json')));
      }
    }
    return found;
  }
}
