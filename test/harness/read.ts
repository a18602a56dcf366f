import { isNotFound } from '@aro/kube';

/** The object `read` returns, or undefined when the apiserver answers 404; any other error is thrown. */
export async function readOrUndefined<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
