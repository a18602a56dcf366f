/**
 * JSON values as they travel in a merge patch. Objects read from the API server are plain JSON, so a
 * structural comparison is exact: there are no class instances, dates or functions to special-case.
 */
type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Structural equality over JSON; `undefined` members count as absent, as they do once serialized. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    return a.every((v, i) => jsonEqual(v, b[i]));
  }
  if (isPlainObject(a)) {
    if (!isPlainObject(b)) return false;
    const aKeys = Object.keys(a).filter((k) => a[k] !== undefined);
    const bKeys = Object.keys(b).filter((k) => b[k] !== undefined);
    if (aKeys.length !== bKeys.length) return false;
    return aKeys.every((k) => Object.prototype.hasOwnProperty.call(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}

function toJson(v: unknown): Json {
  // A round trip drops `undefined` members exactly as the request body will.
  return JSON.parse(JSON.stringify(v)) as Json;
}

function diffObjects(
  original: Record<string, unknown>,
  modified: Record<string, unknown>,
): Record<string, Json> {
  const patch: Record<string, Json> = {};
  for (const key of Object.keys(original)) {
    if (original[key] !== undefined && modified[key] === undefined) patch[key] = null;
  }
  for (const key of Object.keys(modified)) {
    const next = modified[key];
    if (next === undefined) continue;
    const prev = original[key];
    if (prev === undefined) {
      patch[key] = toJson(next);
    } else if (isPlainObject(prev) && isPlainObject(next)) {
      const nested = diffObjects(prev, next);
      if (Object.keys(nested).length > 0) patch[key] = nested;
    } else if (!jsonEqual(prev, next)) {
      // Arrays and scalars are replaced whole: RFC 7386 has no way to address an array element.
      patch[key] = toJson(next);
    }
  }
  return patch;
}

/**
 * The RFC 7386 JSON merge patch that turns `original` into `modified`: changed members with their new
 * value, removed members as `null`, nested objects diffed member by member, arrays replaced whole.
 * Returns `undefined` when nothing changed, so a caller can skip the round trip.
 *
 * A member set to `null` in `modified` comes out as `null`, which the server reads as "remove": merge
 * patch cannot set a member to null, the same limit controller-runtime's MergeFrom has.
 */
export function createMergePatch(original: object, modified: object): object | undefined {
  if (!isPlainObject(original) || !isPlainObject(modified)) {
    throw new TypeError('createMergePatch needs two plain JSON objects');
  }
  const patch = diffObjects(original, modified);
  return Object.keys(patch).length > 0 ? patch : undefined;
}
