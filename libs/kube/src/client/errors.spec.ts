import type { ResourceKind } from '@aro/api';
import {
  KubeApiError,
  KubeTransportError,
  ignoreNotFound,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isInvalid,
  isNotFound,
  statusMessage,
} from './errors';
import { PodKind } from './kinds';
import { resourcePath } from './paths';

const RunnerKind: ResourceKind = {
  group: 'actions.github.com',
  version: 'v1alpha1',
  kind: 'EphemeralRunner',
  plural: 'ephemeralrunners',
  namespaced: true,
};

function apiError(code: number, reason?: string, message?: string): KubeApiError {
  return new KubeApiError(
    code,
    { verb: 'create', kind: PodKind, namespace: 'ns', name: 'p' },
    { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message },
  );
}

describe('KubeApiError', () => {
  it('names the verb, the object and the server message', () => {
    const e = apiError(403, 'Forbidden', 'pods "p" is forbidden: exceeded quota: q');
    expect(e.message).toBe(
      'create Pod ns/p failed: pods "p" is forbidden: exceeded quota: q (HTTP 403 Forbidden)',
    );
    expect(e.statusCode).toBe(403);
    expect(e.reason).toBe('Forbidden');
  });

  it('names the group of a custom kind and falls back to the body text without a Status', () => {
    const e = new KubeApiError(
      502,
      { verb: 'get', kind: RunnerKind, namespace: 'ns', name: 'r' },
      undefined,
      'Bad gateway\n',
    );
    expect(e.message).toBe(
      'get EphemeralRunner.actions.github.com ns/r failed: Bad gateway (HTTP 502 Unknown)',
    );
  });

  it('derives the reason from the code when the body is not a Status', () => {
    expect(isNotFound(new KubeApiError(404, { verb: 'get', kind: PodKind }))).toBe(true);
    expect(isConflict(new KubeApiError(409, { verb: 'get', kind: PodKind }))).toBe(true);
  });
});

describe('error predicates', () => {
  it('tell the reasons apart, including the two 409s', () => {
    expect(isNotFound(apiError(404, 'NotFound'))).toBe(true);
    expect(isAlreadyExists(apiError(409, 'AlreadyExists'))).toBe(true);
    expect(isConflict(apiError(409, 'AlreadyExists'))).toBe(false);
    expect(isConflict(apiError(409, 'Conflict'))).toBe(true);
    expect(isAlreadyExists(apiError(409, 'Conflict'))).toBe(false);
    expect(isInvalid(apiError(422, 'Invalid'))).toBe(true);
    expect(isForbidden(apiError(403, 'Forbidden'))).toBe(true);
    expect(isGone(apiError(410, 'Expired'))).toBe(true);
    expect(isGone(apiError(410, 'Gone'))).toBe(true);
    expect(isGone(apiError(500, 'Expired'))).toBe(true);
    expect(isNotFound(apiError(403, 'Forbidden'))).toBe(false);
  });

  it('are false for anything that is not an API error', () => {
    const transport = new KubeTransportError({ verb: 'get', kind: PodKind }, 'ECONNREFUSED');
    for (const e of [transport, new Error('x'), undefined, 'NotFound']) {
      expect(isNotFound(e) || isConflict(e) || isGone(e) || isForbidden(e)).toBe(false);
      expect(statusMessage(e)).toBeUndefined();
    }
  });

  it('statusMessage returns the server message', () => {
    expect(statusMessage(apiError(403, 'Forbidden', 'exceeded quota: compute'))).toBe(
      'exceeded quota: compute',
    );
  });

  it('ignoreNotFound swallows only not-found', () => {
    expect(() => ignoreNotFound(apiError(404, 'NotFound'))).not.toThrow();
    const conflict = apiError(409, 'Conflict');
    expect(() => ignoreNotFound(conflict)).toThrow(conflict);
  });
});

describe('resourcePath', () => {
  it('builds core, grouped, cluster-wide and subresource paths', () => {
    expect(resourcePath(PodKind, 'ns', 'p')).toBe('/api/v1/namespaces/ns/pods/p');
    expect(resourcePath(PodKind, undefined)).toBe('/api/v1/pods');
    expect(resourcePath(PodKind, 'ns', 'p', 'status')).toBe('/api/v1/namespaces/ns/pods/p/status');
    expect(resourcePath(RunnerKind, 'ns')).toBe(
      '/apis/actions.github.com/v1alpha1/namespaces/ns/ephemeralrunners',
    );
    const ns: ResourceKind = {
      group: '',
      version: 'v1',
      kind: 'Namespace',
      plural: 'namespaces',
      namespaced: false,
    };
    expect(resourcePath(ns, 'ignored', 'n1')).toBe('/api/v1/namespaces/n1');
  });

  it('refuses a namespaced object without a namespace and an empty name', () => {
    expect(() => resourcePath(PodKind, '', 'p')).toThrow(/needs a namespace/);
    expect(() => resourcePath(PodKind, 'ns', '')).toThrow(/needs a name/);
  });
});
