import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { ConfigMapKind, type KubeClient, isNotFound } from '@aro/kube';
import { waitFor } from './wait-for';

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

/** One request as the audit log recorded it (Metadata level: who, what, on which object, answer). */
export interface AuditedRequest {
  user: string;
  verb: string;
  /** `resource[/subresource]`, or `(non-resource)`. */
  resource: string;
  namespace?: string;
  name?: string;
  code?: number;
}

/** Every completed request in the audit log past `fromLine`, in the order the apiserver logged them. */
export async function auditedRequests(
  path: string,
  fromLine = 0,
): Promise<{ requests: AuditedRequest[]; lines: number }> {
  const requests: AuditedRequest[] = [];
  let lines = 0;
  const rl = createInterface({ input: createReadStream(path) });
  for await (const line of rl) {
    if (lines++ < fromLine) continue;
    const event = JSON.parse(line) as {
      verb: string;
      stage: string;
      user: { username: string };
      objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
      responseStatus?: { code?: number };
    };
    if (event.stage !== 'ResponseComplete') continue;
    const ref = event.objectRef;
    requests.push({
      user: event.user.username,
      verb: event.verb,
      resource: `${ref?.resource ?? '(non-resource)'}${ref?.subresource ? `/${ref.subresource}` : ''}`,
      namespace: ref?.namespace,
      name: ref?.name,
      code: event.responseStatus?.code,
    });
  }
  return { requests, lines };
}

/**
 * The audit log up to now. The apiserver writes it in batches, so this makes one request of its own (a
 * read of a ConfigMap no one else names, in `namespace`) and reads until that appears: everything
 * answered before it is then in the log.
 */
export async function auditedRequestsUpToNow(
  kube: KubeClient,
  namespace: string,
  auditLogPath: string,
): Promise<AuditedRequest[]> {
  const marker = `audit-marker-${Date.now()}`;
  await kube.get<V1ConfigMap>(ConfigMapKind, namespace, marker).catch((err: unknown) => {
    if (!isNotFound(err)) throw err;
  });
  return waitFor(
    async () => {
      const { requests } = await auditedRequests(auditLogPath);
      return requests.some((r) => r.resource === 'configmaps' && r.name === marker) ? requests : undefined;
    },
    { timeoutMs: 60_000, description: `the audit log to record the read of configmap ${marker}` },
  );
}
