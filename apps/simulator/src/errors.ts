/**
 * The two error dialects on the wire. The Actions service answers with VSS "wrapped exception"
 * bodies whose `typeName` clients match by substring; GitHub REST answers with `{message,
 * documentation_url}`. Handlers throw a `SimulatorHttpError` and the server renders it in the
 * dialect of the route (or as text/plain / empty when a fault asks for it).
 */

export type ErrorDialect = 'vss' | 'rest';

export class SimulatorHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** VSS exception short name (`TaskAgentExistsException`); absent for REST errors. */
    readonly typeKey?: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'SimulatorHttpError';
  }
}

const vssNamespace: Record<string, string> = {
  TaskAgentExistsException: 'GitHub.DistributedTask.WebApi',
  TaskAgentNotFoundException: 'GitHub.DistributedTask.WebApi',
  TaskAgentJobStillRunningException: 'GitHub.DistributedTask.WebApi',
  TaskAgentSessionConflictException: 'GitHub.DistributedTask.WebApi',
  TaskAgentSessionExpiredException: 'GitHub.DistributedTask.WebApi',
  RunnerScaleSetNotFoundException: 'GitHub.DistributedTask.WebApi',
  RunnerScaleSetExistsException: 'GitHub.DistributedTask.WebApi',
  RunnerGroupNotFoundException: 'GitHub.DistributedTask.WebApi',
};

export function vssError(status: number, typeKey: string, message: string): SimulatorHttpError {
  return new SimulatorHttpError(status, message, typeKey);
}

export function restError(
  status: number,
  message: string,
  headers?: Record<string, string>,
): SimulatorHttpError {
  return new SimulatorHttpError(status, message, undefined, headers);
}

/** The JSON body of a VSS exception, as the Actions service sends it. */
export function vssErrorBody(typeKey: string, message: string): Record<string, unknown> {
  const ns = vssNamespace[typeKey] ?? 'GitHub.Services.WebApi';
  return {
    $id: '1',
    innerException: null,
    message,
    typeName: `${ns}.${typeKey}, ${ns}`,
    typeKey,
    errorCode: 0,
    eventId: 3000,
  };
}

export function restErrorBody(message: string): Record<string, unknown> {
  return { message, documentation_url: 'https://docs.github.com/rest' };
}

/** Default exception short names for statuses raised without one (injected faults, auth refusals). */
export function defaultTypeKey(status: number): string {
  if (status === 401) return 'VssUnauthorizedException';
  if (status === 403) return 'AccessDeniedException';
  if (status === 404) return 'VssResourceNotFoundException';
  if (status === 429) return 'VssRequestThrottledException';
  if (status === 501) return 'NotImplementedException';
  if (status >= 500) return 'VssServiceException';
  return 'VssServiceException';
}
