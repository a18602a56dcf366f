import { waitFor } from '../../harness';
import { scaled } from '../../harness/time-scale';

describe('waitFor', () => {
  it('resolves with the first truthy result', async () => {
    let polls = 0;
    const value = await waitFor(() => (++polls >= 3 ? { polls } : undefined), {
      description: 'three polls',
      intervalMs: 1,
    });
    expect(value).toEqual({ polls: 3 });
  });

  it('times out with a message naming what it waited for and the last error seen', async () => {
    await expect(
      waitFor(
        () => {
          throw new Error('pod x not found');
        },
        { description: 'pod x to be Running', timeoutMs: 50, intervalMs: 10 },
      ),
    ).rejects.toThrow(
      new RegExp(
        `Timed out after ${scaled(50)} ms.*\\(\\d+ polls\\) waiting for pod x to be Running; the last poll threw: pod x not found`,
      ),
    );
  });

  it('reports the last falsy result when nothing threw', async () => {
    await expect(
      waitFor(() => 0, { description: 'a count above zero', timeoutMs: 30, intervalMs: 10 }),
    ).rejects.toThrow(/waiting for a count above zero; the last poll returned 0/);
  });
});
