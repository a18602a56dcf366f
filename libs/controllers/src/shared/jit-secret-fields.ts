import type { V1Secret } from '@kubernetes/client-node';
import { JitSecretKeys } from '@aro/api';

/*
 * The runner's identity as its jitconfig secret records it (the secret is built by the EphemeralRunner
 * controller's runner-resources.ts); read by that controller and by the registration services, which
 * recover a registration's ID from it when a runner's status never recorded one.
 */

/** The runner ID stored in the jitconfig secret, or an error saying why it is not usable. */
export function runnerIdFromSecret(secret: V1Secret): number {
  const raw = secret.data?.[JitSecretKeys.runnerId];
  const text = raw === undefined ? undefined : Buffer.from(raw, 'base64').toString('utf8');
  const id = text !== undefined && /^-?\d+$/.test(text.trim()) ? Number(text.trim()) : Number.NaN;
  if (!Number.isSafeInteger(id)) {
    throw new Error(
      `invalid runner ID in jitconfig secret: ${JSON.stringify(text ?? null)} is not an integer`,
    );
  }
  if (id <= 0) {
    throw new Error(`invalid runner ID in jitconfig secret: ${id}`);
  }
  return id;
}

export function runnerNameFromSecret(secret: V1Secret): string {
  const raw = secret.data?.[JitSecretKeys.runnerName];
  return raw === undefined ? '' : Buffer.from(raw, 'base64').toString('utf8');
}
