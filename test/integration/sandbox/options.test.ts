import { OptionsError, parseSandboxOptions } from '../../sandbox/options';
import { ProgressView, jobCounts, renderSnapshot, type Snapshot } from '../../sandbox/progress';
import { formatDuration, percentile, table } from '../../sandbox/stats';
import type { JobView } from '../../../apps/simulator/src';

// The sandbox's pure parts: flags, percentiles, the progress block. (In the integration project because
// the unit project's roots are apps/ and libs/; nothing here touches the control plane.)
describe('sandbox options', () => {
  it('has defaults that finish in about two minutes', () => {
    expect(parseSandboxOptions([])).toMatchObject({
      jobs: 40,
      rate: 1,
      maxRunners: 10,
      minRunners: 0,
      duration: 5,
      chaos: false,
      keep: false,
      listenerMode: 'pod',
    });
    expect(parseSandboxOptions(['--listener-mode', 'shared']).listenerMode).toBe('shared');
  });

  it('reads every flag', () => {
    const o = parseSandboxOptions(
      '--jobs 20 --rate 2.5 --max-runners 3 --min-runners 1 --duration 0 --fail-share 0.1 --exit7-share 0.05 --chaos --keep'.split(
        ' ',
      ),
    );
    expect(o).toMatchObject({
      jobs: 20,
      rate: 2.5,
      maxRunners: 3,
      minRunners: 1,
      duration: 0,
      failShare: 0.1,
      exit7Share: 0.05,
      chaos: true,
      keep: true,
    });
  });

  // --keep with nothing queued: a person who wants to apply their own set need not wait for a workload.
  it('takes --jobs 0, and a scale-set name as long as the chart allows', () => {
    const longest = 'arc-runner-set-' + 'x'.repeat(30);
    expect(parseSandboxOptions(['--jobs', '0', '--name', longest])).toMatchObject({ jobs: 0, name: longest });
    expect(parseSandboxOptions([]).name).toBe('sandbox');
  });

  it.each([
    [['--jobs=-1'], '--jobs -1: must be a whole number, 0 or more'],
    [['--name', 'a'.repeat(46)], `--name ${'a'.repeat(46)}: must be at most 45 lowercase letters`],
    [['--name', 'Arc_Set'], '--name Arc_Set'],
    [['--jobs', 'many'], '--jobs many'],
    [['--rate=-1'], '--rate -1: must be a number above 0'],
    [['--fail-share', '1.5'], '--fail-share 1.5: must be between 0 and 1'],
    [['--max-runners', '2.5'], '--max-runners 2.5'],
    [['--min-runners', '11'], '--min-runners 11: must be a whole number from 0 to --max-runners (10)'],
    [['--min-runners=-1'], '--min-runners -1'],
    [['--bogus'], "Unknown option '--bogus'"],
    [['--listener-mode', 'one'], '--listener-mode one: must be pod or shared'],
  ])('refuses %j, naming the flag', (args, message) => {
    expect(() => parseSandboxOptions(args)).toThrow(OptionsError);
    expect(() => parseSandboxOptions(args)).toThrow(message);
  });
});

describe('sandbox figures', () => {
  it('reads durations as a person does, never "4 min 60 s"', () => {
    expect(formatDuration(850)).toBe('850 ms');
    expect(formatDuration(4_200)).toBe('4.2 s');
    expect(formatDuration(125_000)).toBe('2 min 5 s');
    expect(formatDuration(299_600)).toBe('5 min 0 s');
  });

  it('takes nearest-rank percentiles', () => {
    const values = Array.from({ length: 20 }, (_, i) => 20 - i); // 20..1, unsorted on purpose
    expect(percentile(values, 50)).toBe(10);
    expect(percentile(values, 95)).toBe(19);
    expect(percentile([], 95)).toBe(0);
  });

  it('counts jobs by what a person waits for', () => {
    const job = (state: string, result: string | null = null) => ({ state, result }) as unknown as JobView;
    expect(
      jobCounts([
        job('queued'),
        job('available'),
        job('acquired'),
        job('running'),
        job('completed', 'succeeded'),
        job('completed', 'failed'),
        job('completed', 'canceled'),
      ]),
    ).toEqual({ total: 7, queued: 3, running: 1, succeeded: 1, failed: 2 });
  });

  it('lines a table up', () => {
    expect(
      table('T', [
        ['a', '1'],
        ['longer', '22'],
      ]).split('\n'),
    ).toEqual(['T', '-----------', 'a      | 1', 'longer | 22', '-----------']);
  });
});

describe('progress view', () => {
  const snapshot: Snapshot = {
    elapsedMs: 12_000,
    jobs: { total: 10, queued: 3, running: 2, succeeded: 4, failed: 1 },
    runnersByPhase: { Running: 2, Pending: 1 },
    desired: 4,
    actual: 3,
    kubeWrites: 40,
    actionsCalls: 5,
    leader: 'aro-controller-1',
    listeners: 1,
  };

  it('shows jobs, runners, calls and the leader', () => {
    expect(renderSnapshot(snapshot).join('\n')).toBe(
      [
        '[ 12s] jobs 10: queued 3, running 2, done 4, failed 1',
        '       runners: desired 4, actual 3 (Pending 1, Running 2)',
        '       API calls so far: Kubernetes writes 40, Actions calls 5',
        '       leader: aro-controller-1; listeners running: 1',
      ].join('\n'),
    );
  });

  function capture(): { out: NodeJS.WritableStream; text: () => string } {
    let text = '';
    const out = { write: (chunk: string) => ((text += chunk), true) } as unknown as NodeJS.WritableStream;
    return { out, text: () => text };
  }

  it('redraws in place on a terminal: cursor up over the last block, clear, draw', () => {
    const { out, text } = capture();
    const view = new ProgressView(out, true);
    view.update(snapshot);
    view.update({ ...snapshot, elapsedMs: 13_000 });
    expect(text()).toContain('\x1b[4A\x1b[J[ 13s]');
    view.event('leader changed', snapshot);
    expect(text()).toContain('\x1b[4A\x1b[Jleader changed\n[ 12s]');
  });

  it('writes plain lines, at most one per interval, through a pipe', () => {
    const { out, text } = capture();
    const view = new ProgressView(out, false, 5_000);
    view.update({ ...snapshot, elapsedMs: 5_000 });
    view.update({ ...snapshot, elapsedMs: 6_000 });
    view.update({ ...snapshot, elapsedMs: 10_000 });
    expect(text()).not.toContain('\x1b');
    expect(text().trim().split('\n')).toHaveLength(2);
    expect(text()).toContain('[  5s] jobs 10: queued 3, running 2, done 4, failed 1 | runners: desired 4');
  });
});
