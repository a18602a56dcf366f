import { renderFleetPage } from './fleet-page';
import type { FleetSnapshot } from './fleet-snapshot';

const snapshot: FleetSnapshot = {
  generatedAt: '2026-12-03T10:00:00.000Z',
  replica: 'aro-0',
  leader: 'aro-1',
  leading: false,
  lastSweep: '2026-12-03T09:58:00.000Z',
  scaleSets: [
    {
      namespace: 'arc-runners',
      name: 'web',
      minRunners: 1,
      maxRunners: 5,
      desiredRunners: 4,
      actualRunners: 3,
      runnersByPhase: { Pending: 1, Running: 2 },
      jobsRunning: 2,
      jobsWaiting: 1,
      orphanSweep: { registrations: 4, runners: 3, orphans: 1, orphansRemoved: 7 },
    },
  ],
  warnings: [
    {
      namespace: 'arc-runners',
      object: 'EphemeralRunner/web-x',
      reason: 'RegistrationFailed',
      message: '<script>alert(1)</script> & more',
      count: 3,
      lastSeen: '2026-12-03T09:59:00.000Z',
    },
  ],
};

describe('renderFleetPage', () => {
  const html = renderFleetPage(snapshot);
  const cell = (name: string) => new RegExp(`data-field="${name}"[^>]*>([^<]*)<`).exec(html)?.[1];

  it('shows each figure of the snapshot in its own field', () => {
    expect(cell('leader')).toBe('aro-1');
    expect(cell('desired')).toBe('4');
    expect(cell('actual')).toBe('3');
    expect(cell('phase-Running')).toBe('2');
    expect(cell('phase-Failed')).toBe('0');
    expect(cell('jobs-waiting')).toBe('1');
    expect(cell('orphans')).toBe('1');
    expect(cell('orphans-removed')).toBe('7');
    expect(html).toContain('<meta http-equiv="refresh" content="10">');
  });

  it('escapes what users and the apiserver wrote (an Event message is text, never markup)', () => {
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt; &amp; more');
  });

  it('says when leader election is off rather than naming no one', () => {
    const off = renderFleetPage({ ...snapshot, replica: undefined, leader: undefined, leading: false });
    expect(/data-field="leader"[^>]*>([^<]*)</.exec(off)?.[1]).toBe('this replica (leader election off)');
  });
});
