import type { RunningSimulator } from '../../apps/simulator/src';

/** A describe block's simulator, and the fixtures its tests start on it. */
export interface SimulatorSuite<F, O> {
  /** The suite's simulator, started before the first test. */
  readonly sim: RunningSimulator;
  /** A fixture on the suite's simulator, stopped after the test that started it. */
  start(opts?: O): Promise<F>;
}

/**
 * One simulator for a describe block (its start costs more than a test's work) and fixtures per test,
 * each stopped after its test so that no controller outlives the test it served.
 */
export function simulatorSuite<F extends { stop(): Promise<void> }, O>(
  startSimulator: () => Promise<RunningSimulator>,
  startFixture: (sim: RunningSimulator, opts?: O) => Promise<F>,
): SimulatorSuite<F, O> {
  let sim: RunningSimulator | undefined;
  const started: F[] = [];
  beforeAll(async () => {
    sim = await startSimulator();
  });
  afterEach(async () => {
    for (const fixture of started.splice(0)) await fixture.stop();
  });
  afterAll(async () => {
    await sim?.stop();
  });
  const current = (): RunningSimulator => {
    if (!sim) throw new Error('the suite simulator is used before beforeAll ran');
    return sim;
  };
  return {
    get sim() {
      return current();
    },
    async start(opts) {
      const fixture = await startFixture(current(), opts);
      started.push(fixture);
      return fixture;
    },
  };
}
