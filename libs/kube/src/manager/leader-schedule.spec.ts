import { SchedulerRegistry } from '@nestjs/schedule';
import { createLogger } from '@aro/observability';
import { LeaderSchedule } from './leader-schedule';

const logger = createLogger({ level: 'silent' });

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(check()).toBe(true);
}

describe('LeaderSchedule', () => {
  it('runs a pass when started, keeps the next one in the SchedulerRegistry, and removes it when stopped', async () => {
    const scheduler = new SchedulerRegistry();
    let passes = 0;
    const schedule = new LeaderSchedule(
      scheduler,
      { name: 'sweep', runOnce: async () => (passes++, 60_000) },
      logger,
    );
    expect(schedule.needLeaderElection).toBe(true);
    const stop = new AbortController();
    const running = schedule.start(stop.signal);
    await until(() => scheduler.getTimeouts().includes('sweep'));
    expect(passes).toBe(1);

    stop.abort();
    await running;
    expect(scheduler.getTimeouts()).not.toContain('sweep');
  });

  it('schedules the next pass after a failed one instead of giving up', async () => {
    const scheduler = new SchedulerRegistry();
    const schedule = new LeaderSchedule(
      scheduler,
      {
        name: 'flaky',
        afterFailureMs: 30_000,
        runOnce: async () => {
          throw new Error('the service is down');
        },
      },
      logger,
    );
    const stop = new AbortController();
    const running = schedule.start(stop.signal);
    await until(() => schedule.scheduled());
    stop.abort();
    await running;
    expect(schedule.scheduled()).toBe(false);
  });

  it('brings the next pass forward when asked, also when asked during a pass, and only while leading', async () => {
    const scheduler = new SchedulerRegistry();
    let passes = 0;
    let duringPass: (() => void) | undefined;
    const schedule = new LeaderSchedule(
      scheduler,
      {
        name: 'audit',
        runOnce: async () => {
          passes++;
          duringPass?.();
          duringPass = undefined;
          return 60 * 60_000;
        },
      },
      logger,
    );
    schedule.runWithin(0); // not leading: nothing to bring forward, and no pass
    const stop = new AbortController();
    const running = schedule.start(stop.signal);
    await until(() => schedule.scheduled());
    expect(passes).toBe(1);

    // Due in an hour; asked for within the floor (1 s): the next pass comes then, not in an hour.
    const asked = Date.now();
    duringPass = () => schedule.runWithin(0);
    schedule.runWithin(0);
    await untilWithin(() => passes === 2, 5_000);
    expect(Date.now() - asked).toBeGreaterThanOrEqual(900);
    // The request made during that pass gives one more pass after it.
    await untilWithin(() => passes === 3, 5_000);
    // Then the task's own hour again.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(passes).toBe(3);
    expect(schedule.scheduled()).toBe(true);

    stop.abort();
    await running;
    schedule.runWithin(0);
    expect(schedule.scheduled()).toBe(false);
  });
});

async function untilWithin(check: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  expect(check()).toBe(true);
}
