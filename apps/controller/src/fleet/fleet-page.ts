import type { FleetScaleSet, FleetSnapshot } from './fleet-snapshot';

/** How often the page reloads itself, seconds: a view costs no API call, so a short period is cheap. */
export const FLEET_PAGE_REFRESH_SECONDS = 10;

const PHASES = ['Pending', 'Running', 'Succeeded', 'Failed', 'Outdated'] as const;

const escapeHtml = (value: unknown): string =>
  String(value ?? '').replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );

function sweepCell(s: FleetScaleSet): string {
  const a = s.orphanSweep;
  if (!a) return '<td data-field="sweep">not yet</td>';
  const leaking = (a.orphans ?? 0) > 0;
  return (
    `<td data-field="sweep" class="${leaking ? 'warn' : ''}">` +
    `<span data-field="registrations">${a.registrations ?? 0}</span> registrations / ` +
    `<span data-field="sweep-runners">${a.runners ?? 0}</span> runners, ` +
    `<span data-field="orphans">${a.orphans ?? 0}</span> orphans ` +
    `(<span data-field="orphans-removed">${a.orphansRemoved ?? 0}</span> removed) ` +
    `<time>${escapeHtml(a.lastPassTime)}</time></td>`
  );
}

function scaleSetRow(s: FleetScaleSet): string {
  const id = escapeHtml(`${s.namespace}/${s.name}`);
  const phases = PHASES.map((p) => `<td data-field="phase-${p}">${s.runnersByPhase[p] ?? 0}</td>`).join('');
  return (
    `<tr data-scale-set="${id}"><td>${id}</td>` +
    `<td data-field="desired">${s.desiredRunners}</td><td data-field="actual">${s.actualRunners}</td>` +
    `<td>${s.minRunners}..${s.maxRunners ?? '∞'}</td>${phases}` +
    `<td data-field="jobs-running">${s.jobsRunning}</td><td data-field="jobs-waiting">${s.jobsWaiting}</td>` +
    `${sweepCell(s)}</tr>`
  );
}

/** The page: plain server-rendered HTML, no script, reloaded by the browser every few seconds. */
export function renderFleetPage(snapshot: FleetSnapshot): string {
  const leader = snapshot.leader ?? (snapshot.leading ? snapshot.replica : undefined);
  const leaderText = leader
    ? escapeHtml(leader)
    : snapshot.replica
      ? 'none observed'
      : 'this replica (leader election off)';
  const warnings = snapshot.warnings
    .map(
      (w) =>
        `<tr data-warning="${escapeHtml(`${w.namespace}/${w.object}/${w.reason}`)}"><td><time>${escapeHtml(w.lastSeen)}</time></td>` +
        `<td>${escapeHtml(w.namespace)}</td><td>${escapeHtml(w.object)}</td><td>${escapeHtml(w.reason)}</td>` +
        `<td>${w.count}</td><td>${escapeHtml(w.message)}</td></tr>`,
    )
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="refresh" content="${FLEET_PAGE_REFRESH_SECONDS}">
<title>ARO fleet</title>
<style>
body{font:14px system-ui,sans-serif;margin:1.5em;color:#1f2328}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #d0d7de;padding:.3em .6em;text-align:left}
th{background:#f6f8fa}.warn{background:#fff1e5}
dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dt{font-weight:600}
</style></head>
<body>
<h1>ARO fleet</h1>
<dl>
<dt>Leader</dt><dd data-field="leader">${leaderText}</dd>
<dt>Served by</dt><dd data-field="replica">${escapeHtml(snapshot.replica ?? 'this replica')}</dd>
<dt>Last orphan sweep</dt><dd data-field="last-sweep">${escapeHtml(snapshot.lastSweep ?? 'not yet')}</dd>
<dt>As of</dt><dd><time data-field="generated-at">${escapeHtml(snapshot.generatedAt)}</time> (reloads every ${FLEET_PAGE_REFRESH_SECONDS} s, from the controller's caches)</dd>
</dl>
<h2>Scale sets</h2>
<table id="scale-sets"><thead><tr><th>scale set</th><th>desired</th><th>actual</th><th>min..max</th>
${PHASES.map((p) => `<th>${p}</th>`).join('')}<th>jobs running</th><th>jobs waiting</th><th>leak audit (last sweep)</th></tr></thead>
<tbody>
${snapshot.scaleSets.map(scaleSetRow).join('\n')}
</tbody></table>
<h2>Recent Warning Events</h2>
<table id="warnings"><thead><tr><th>last seen</th><th>namespace</th><th>object</th><th>reason</th><th>count</th><th>message</th></tr></thead>
<tbody>
${warnings}
</tbody></table>
</body></html>
`;
}
