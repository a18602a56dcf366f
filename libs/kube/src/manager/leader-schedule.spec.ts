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
});
