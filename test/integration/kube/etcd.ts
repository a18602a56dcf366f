import { readFileSync } from 'node:fs';
import { controlPlaneInfo } from '../../harness';

/** The client URL of the harness's etcd, read from the command line of its process. */
function etcdUrl(): string {
  const { pids } = controlPlaneInfo();
  const args = readFileSync(`/proc/${pids.etcd}/cmdline`, 'utf8').split('\0');
  const flag = args.find((a) => a.startsWith('--listen-client-urls='));
  if (!flag) throw new Error(`etcd (pid ${pids.etcd}) was started without --listen-client-urls`);
  return flag.slice('--listen-client-urls='.length).split(',')[0];
}

async function etcdCall<T>(path: string, body: unknown): Promise<T> {
  const res = await fetch(`${etcdUrl()}${path}`, {
    method: 'POST',
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  if (!res.ok) throw new Error(`etcd ${path} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as T;
}

/**
 * Compacts etcd up to its current revision, as the API server does every few minutes, so that a watch
 * from any older resourceVersion that reaches etcd is answered with 410 Gone. Returns the revision.
 */
export async function compactEtcd(): Promise<number> {
  const range = await etcdCall<{ header: { revision: string } }>('/v3/kv/range', {
    key: Buffer.from('/registry/health-probe').toString('base64'),
  });
  const revision = Number(range.header.revision);
  await etcdCall('/v3/kv/compaction', { revision, physical: true });
  return revision;
}
