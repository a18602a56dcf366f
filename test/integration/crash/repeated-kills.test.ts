import { AutoscalingRunnerSetKind } from '@aro/api';
import type { JobView } from '../../../apps/simulator/src';
import {
  ScaleSetScene,
  crashStage,
  expectDeletedClean,
  expectJobsSucceededOnce,
  expectNeverAboveMax,
  expectScaledToZeroClean,
  scaleSetScene,
  startLeader,
  progress,
  stopScene,
} from './scene';
import { scaled } from '../../harness/time-scale';

/*
 * The controller SIGKILLed again and again while a burst of jobs goes through a small scale set:
 * each replica leads for a few seconds and dies mid-work (creating runners, registering them,
 * deleting finished ones), and the next one picks up from whatever state that left.
 */
jest.setTimeout(scaled(300_000));

const MAX_RUNNERS = 5;
const JOBS = 15;
/** How long each replica leads before it is killed: fixed, so a failure can be replayed. */
const LEAD_MS = [1_500, 3_000, 800, 2_500, 1_200, 4_000, 2_000, 600];

describe('The controller SIGKILLed every few seconds during a burst of jobs', () => {
  const stage = crashStage();
  let scene: ScaleSetScene | undefined;

  afterEach(async () => {
    await stopScene(scene);
    scene = undefined;
  });

  it(`runs ${JOBS} jobs with maxRunners ${MAX_RUNNERS} across repeated kills: each once, none lost, nothing leaked`, async () => {
    const { sim } = stage;
    await startLeader(stage);
    const s = (scene = await scaleSetScene(stage, 'crash-burst', {
      maxRunners: MAX_RUNNERS,
      jobDurationMs: 3_000,
    }));
    const jobs: JobView[] = Array.from({ length: JOBS }, () => sim.enqueueJob({ scaleSetId: s.scaleSetId }));
    const completed = () => jobs.filter((j) => sim.job(j.jobId)?.state === 'completed').length;
    let kills = 0;
    let killsMidWork = 0;
    for (const [i, leadMs] of LEAD_MS.entries()) {
      // At least three kills whatever happens; then only while there is work left to interrupt.
      if (i >= 3 && completed() === JOBS) break;
      await new Promise((r) => setTimeout(r, leadMs));
      const done = completed();
      await stage.controller.kill();
      kills++;
      if (done < JOBS) killsMidWork++;
      progress(`crash burst: kill ${kills} after leading ${leadMs} ms; jobs completed ${done}/${JOBS}`);
      await startLeader(stage);
    }

    await expectJobsSucceededOnce(stage, s, jobs);
    expectNeverAboveMax(s);
    // A job lasts 3 s and a wave of 5 needs the controller to make its runners, so the first two
    // kills cannot come after the last job: the case interrupted work in flight, or it proves nothing.
    expect(killsMidWork).toBeGreaterThanOrEqual(2);
    await expectScaledToZeroClean(stage, s);
    progress(
      `crash burst: ${kills} kills; most live runners at once ${s.highWater.runners} (objects ${s.highWater.objects})`,
    );
    await stage.kube.delete(AutoscalingRunnerSetKind, s.namespace, s.arsName);
    await expectDeletedClean(stage, s);
  });
});
