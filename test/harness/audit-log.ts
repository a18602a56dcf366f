import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';

/*
 * The apiserver's audit log (ControlPlane.start({ auditLog: true })) read back: one client's requests,
 * counted exactly, since apiserver_request_total has no user label.
 */

/** Requests one user made, as `verb resource[/subresource]` -> count, from the audit log past `fromLine`. */
export async function auditCounts(
  path: string,
  user: string,
  fromLine: number,
): Promise<{ counts: Map<string, number>; lines: number }> {
  const counts = new Map<string, number>();
  let lines = 0;
  const rl = createInterface({ input: createReadStream(path) });
  for await (const line of rl) {
    if (lines++ < fromLine || !line.includes(`"username":"${user}"`)) continue;
    const event = JSON.parse(line) as {
      verb: string;
      stage: string;
      user: { username: string };
      objectRef?: { resource?: string; subresource?: string };
    };
    if (event.stage !== 'ResponseComplete' || event.user.username !== user) continue;
    const ref = event.objectRef;
    const key = `${event.verb} ${ref?.resource ?? '(non-resource)'}${ref?.subresource ? `/${ref.subresource}` : ''}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return { counts, lines };
}
