import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { controllerEnvSchema, loadControllerConfig } from './config';

/**
 * `.env.example` is the operator's list of the controller's variables. It is written by hand (each line
 * of meaning is for a person), so this spec holds it to the schema that parses the environment: every
 * variable the schema reads is listed, nothing else is, and every value shown is the default the
 * controller really applies.
 */
const example = readFileSync(join(__dirname, '../../../.env.example'), 'utf8');

/** `NAME=value` lines, and `# NAME=` lines (listed without a default). */
function listed(): Map<string, string | undefined> {
  const vars = new Map<string, string | undefined>();
  for (const line of example.split('\n')) {
    const set = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (set) vars.set(set[1], set[2]);
    const commented = /^# ([A-Z][A-Z0-9_]*)=/.exec(line);
    if (commented) vars.set(commented[1], undefined);
  }
  return vars;
}

describe('.env.example', () => {
  it('lists every variable the controller reads, and no other', () => {
    const schemaNames = Object.keys(controllerEnvSchema.shape).sort();
    expect([...listed().keys()].sort()).toEqual(schemaNames);
  });

  it('shows each default as the controller applies it', () => {
    const defaults = loadControllerConfig({}) as Record<string, unknown>;
    for (const [name, value] of listed()) {
      if (value === undefined) continue;
      const parsed = loadControllerConfig({ [name]: value }) as Record<string, unknown>;
      expect({ name, value: parsed[name] }).toEqual({ name, value: defaults[name] });
    }
  });
});
