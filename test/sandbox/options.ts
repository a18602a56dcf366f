import { parseArgs } from 'node:util';
import { SCALE_SET_RELEASE } from './charts';

/** What `npm run sandbox -- ...` was asked for. */
export interface SandboxOptions {
  /** Jobs queued in total; 0 to bring everything up and go straight to --keep (or the uninstall). */
  jobs: number;
  /** The scale-set chart's release: the AutoscalingRunnerSet's and the scale set's name. */
  name: string;
  /** Jobs queued per second, in waves every `waveSeconds`. */
  rate: number;
  /** The scale set's maxRunners. */
  maxRunners: number;
  /** The scale set's minRunners: idle runners kept ready. */
  minRunners: number;
  /** How long each job runs on its runner, in seconds. */
  duration: number;
  /** Share (0..1) of jobs whose workflow fails (the runner still exits 0). */
  failShare: number;
  /** Share (0..1) of runners that crash with exit code 7 during their job. */
  exit7Share: number;
  /** Kill the leading controller and the listener once each, mid-run. */
  chaos: boolean;
  /** `pod`: a listener pod per scale set (the chart's default); `shared`: the chart's shared listener Deployment. */
  listenerMode?: 'pod' | 'shared';
  /** Leave everything running after the workload, until Ctrl-C. */
  keep: boolean;
  /** Seconds between two waves of jobs. */
  waveSeconds: number;
  /** Give up on the workload after this many seconds. */
  timeoutSeconds: number;
  help: boolean;
}

export const USAGE = `usage: npm run sandbox -- [options]

  --jobs N           jobs to queue in total, 0 for none (default 40)
  --name NAME        the scale set's name, the scale-set chart's release (default sandbox; up to 45
                     characters, as the chart allows)
  --rate R           jobs queued per second, in waves every 5 s (default 1)
  --max-runners N    the scale set's maxRunners (default 10)
  --min-runners N    the scale set's minRunners, idle runners kept ready (default 0)
  --duration S       seconds each job runs on its runner (default 5)
  --fail-share F     share 0..1 of jobs that fail (default 0)
  --exit7-share F    share 0..1 of runners that crash with exit code 7 mid-job (default 0)
  --listener-mode M  pod (default: a listener pod per scale set) or shared (the controller chart's
                     listener.mode shared: one listener Deployment for every scale set)
  --chaos            kill the leading controller and the listener once each, mid-run
  --keep             leave everything running after the workload and print how to reach it
  --timeout S        give up on the workload after S seconds (default 600)
  -h, --help         this text`;

export class OptionsError extends Error {
  override readonly name = 'OptionsError';
}

function number(
  values: Record<string, unknown>,
  name: string,
  fallback: number,
  check: (n: number) => boolean,
  rule: string,
): number {
  const text = values[name];
  if (text === undefined) return fallback;
  const n = Number(text);
  if (typeof text !== 'string' || text.trim() === '' || !Number.isFinite(n) || !check(n)) {
    throw new OptionsError(`--${name} ${String(text)}: must be ${rule}`);
  }
  return n;
}

/** Reads the command line; throws an OptionsError naming the flag for any bad value. */
export function parseSandboxOptions(argv: readonly string[]): SandboxOptions {
  let values: Record<string, unknown>;
  try {
    values = parseArgs({
      args: [...argv],
      options: {
        jobs: { type: 'string' },
        name: { type: 'string' },
        rate: { type: 'string' },
        'max-runners': { type: 'string' },
        'min-runners': { type: 'string' },
        duration: { type: 'string' },
        'fail-share': { type: 'string' },
        'exit7-share': { type: 'string' },
        timeout: { type: 'string' },
        'listener-mode': { type: 'string' },
        chaos: { type: 'boolean', default: false },
        keep: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
    }).values;
  } catch (err) {
    throw new OptionsError((err as Error).message);
  }
  const positiveInt = (n: number): boolean => Number.isInteger(n) && n > 0;
  const wholeNumber = (n: number): boolean => Number.isInteger(n) && n >= 0;
  const name = values.name === undefined ? SCALE_SET_RELEASE : String(values.name);
  // The chart's own rule (values.schema.json): a DNS label the release's objects can be named after.
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name) || name.length > 45) {
    throw new OptionsError(
      `--name ${name}: must be at most 45 lowercase letters, digits and '-', starting and ending with a letter or digit`,
    );
  }
  const listenerMode = values['listener-mode'] ?? 'pod';
  if (listenerMode !== 'pod' && listenerMode !== 'shared') {
    throw new OptionsError(`--listener-mode ${String(listenerMode)}: must be pod or shared`);
  }
  const share = (n: number): boolean => n >= 0 && n <= 1;
  const maxRunners = number(values, 'max-runners', 10, positiveInt, 'a whole number above 0');
  return {
    jobs: number(values, 'jobs', 40, wholeNumber, 'a whole number, 0 or more'),
    name,
    rate: number(values, 'rate', 1, (n) => n > 0, 'a number above 0'),
    maxRunners,
    minRunners: number(
      values,
      'min-runners',
      0,
      (n) => Number.isInteger(n) && n >= 0 && n <= maxRunners,
      `a whole number from 0 to --max-runners (${maxRunners})`,
    ),
    duration: number(values, 'duration', 5, (n) => n >= 0, 'a number of seconds, 0 or more'),
    failShare: number(values, 'fail-share', 0, share, 'between 0 and 1'),
    exit7Share: number(values, 'exit7-share', 0, share, 'between 0 and 1'),
    timeoutSeconds: number(values, 'timeout', 600, (n) => n > 0, 'a number of seconds above 0'),
    waveSeconds: 5,
    listenerMode,
    chaos: values.chaos === true,
    keep: values.keep === true,
    help: values.help === true,
  };
}
