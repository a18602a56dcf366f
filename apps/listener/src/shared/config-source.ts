import type { Logger } from '@aro/observability';
import { type LoadedListenerConfig, parseListenerConfigText } from '../config';

/** Where a shared listener finds the configs of the scale sets it serves: a directory or a Secret. */
export interface ListenerConfigSource {
  /** What the logs name. */
  readonly where: string;
  /**
   * Every scale set's config, by key. Throws only when the source itself cannot be read (the caller
   * then serves on what it read before); a config that does not validate is skipped (see ConfigEntries).
   */
  read(): Promise<Map<string, LoadedListenerConfig>>;
}

/** One scale set's config as found in a source: its key, what names it in a log, and its text. */
export interface ConfigEntry {
  key: string;
  source: string;
  text: () => string;
}

/**
 * Validates the entries of a source. An entry that does not read or validate is logged with its source
 * and the field, and skipped: one bad scale set never keeps the others from being served. The same bad
 * entry is logged once, not on every scan.
 */
export class ConfigEntries {
  private readonly reported = new Map<string, string>();

  constructor(private readonly logger: Logger) {}

  validate(entries: Iterable<ConfigEntry>): Map<string, LoadedListenerConfig> {
    const configs = new Map<string, LoadedListenerConfig>();
    for (const { key, source, text } of entries) {
      try {
        configs.set(key, parseListenerConfigText(text(), source));
        this.reported.delete(source);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        if (this.reported.get(source) === message) continue;
        this.reported.set(source, message);
        this.logger.error('Skipping a scale set whose listener config is invalid', undefined, {
          key,
          source,
          error: message,
        });
      }
    }
    return configs;
  }
}
