import { createLogger } from '@aro/observability';
import { installTestFaults } from './test-faults';

describe('installTestFaults', () => {
  const logger = createLogger({ level: 'silent' });
  let before: number;

  beforeEach(() => {
    before = process.listenerCount('SIGUSR2');
  });

  afterEach(() => {
    process.removeAllListeners('SIGUSR2');
  });

  it('arms nothing unless ARO_TEST_FAULTS names the switch', () => {
    installTestFaults(undefined, logger);
    installTestFaults('', logger);
    installTestFaults('something-else', logger);
    expect(process.listenerCount('SIGUSR2')).toBe(before);
  });

  it('arms hang-on-sigusr2 when named, among others', () => {
    installTestFaults('other, hang-on-sigusr2', logger);
    expect(process.listenerCount('SIGUSR2')).toBe(before + 1);
  });
});
