import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '@aro/observability';
import type { FaultWindowSpec } from './fault-windows';
import type { RunningSimulator } from './simulator';
import type {
  AppSeed,
  CreateScaleSetOptions,
  EnqueueJobOptions,
  FaultSpec,
  JobFilter,
  JobResult,
  JobState,
  OwnerRef,
  RunnerFilter,
  RunnerStatus,
} from './types';

/**
 * `/_sim/...`: the in-process admin methods over HTTP, for the standalone simulator (sandbox, a
 * simulated runner in a pod, a person with curl). Bodies are JSON; errors are `{"error": message}`
 * with 400 for a refused operation and 404 for an unknown admin path.
 */

class AdminError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

type Json = Record<string, unknown>;

function obj(body: string): Json {
  if (!body.trim()) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new AdminError(400, 'request body is not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new AdminError(400, 'request body must be a JSON object');
  }
  return parsed as Json;
}

function str(b: Json, key: string): string {
  const v = b[key];
  if (typeof v !== 'string' || !v) throw new AdminError(400, `"${key}" must be a non-empty string`);
  return v;
}

function owner(v: unknown): OwnerRef {
  if (typeof v === 'object' && v !== null) {
    const o = v as Json;
    if (typeof o.enterprise === 'string') return { enterprise: o.enterprise };
    if (typeof o.org === 'string')
      return typeof o.repo === 'string' ? { org: o.org, repo: o.repo } : { org: o.org };
  }
  throw new AdminError(400, 'owner must be {"org"[, "repo"]} or {"enterprise"}');
}

const RUNNER_STATUSES: readonly RunnerStatus[] = ['offline', 'idle', 'busy'];
const JOB_STATES: readonly JobState[] = ['queued', 'available', 'acquired', 'running', 'completed'];

function oneOf<T extends string>(value: string, allowed: readonly T[], key: string): T {
  if (!(allowed as readonly string[]).includes(value))
    throw new AdminError(400, `"${key}" must be one of ${allowed.join(', ')}`);
  return value as T;
}

function positiveInt(value: string, key: string): number {
  if (!/^\d+$/.test(value)) throw new AdminError(400, `"${key}" must be a positive integer`);
  return Number(value);
}

function runnerFilter(query: URLSearchParams): RunnerFilter {
  const scaleSetId = query.get('scaleSetId');
  const status = query.get('status');
  return {
    ...(scaleSetId !== null ? { scaleSetId: positiveInt(scaleSetId, 'scaleSetId') } : {}),
    ...(status !== null ? { status: oneOf(status, RUNNER_STATUSES, 'status') } : {}),
  };
}

function jobFilter(query: URLSearchParams): JobFilter {
  const scaleSetId = query.get('scaleSetId');
  const state = query.get('state');
  return {
    ...(scaleSetId !== null ? { scaleSetId: positiveInt(scaleSetId, 'scaleSetId') } : {}),
    ...(state !== null ? { state: oneOf(state, JOB_STATES, 'state') } : {}),
  };
}

function scaleSetOptions(b: Json): CreateScaleSetOptions {
  const labels = b.labels;
  if (labels !== undefined && (!Array.isArray(labels) || !labels.every((l) => typeof l === 'string' && l)))
    throw new AdminError(400, '"labels" must be an array of non-empty strings');
  if (b.runnerGroupId !== undefined && typeof b.runnerGroupId !== 'number')
    throw new AdminError(400, '"runnerGroupId" must be a number');
  if (b.runnerGroup !== undefined && typeof b.runnerGroup !== 'string')
    throw new AdminError(400, '"runnerGroup" must be a string');
  if (b.runnerSetting !== undefined && (typeof b.runnerSetting !== 'object' || b.runnerSetting === null))
    throw new AdminError(400, '"runnerSetting" must be an object');
  return {
    name: str(b, 'name'),
    ...(typeof b.runnerGroupId === 'number' ? { runnerGroupId: b.runnerGroupId } : {}),
    ...(typeof b.runnerGroup === 'string' ? { runnerGroup: b.runnerGroup } : {}),
    ...(labels !== undefined ? { labels: labels as string[] } : {}),
    ...(b.runnerSetting !== undefined ? { runnerSetting: b.runnerSetting as Record<string, unknown> } : {}),
  };
}

function jobSelector(b: Json): string | EnqueueJobOptions | undefined {
  if (typeof b.jobId === 'string') return b.jobId;
  if (typeof b.job === 'object' && b.job !== null) return b.job as EnqueueJobOptions;
  return undefined;
}

function send(res: ServerResponse, status: number, body?: unknown): void {
  if (res.headersSent || res.destroyed) return;
  const payload = body === undefined ? null : Buffer.from(JSON.stringify(body), 'utf8');
  res.writeHead(status, {
    'Content-Length': String(payload ? payload.length : 0),
    ...(payload ? { 'Content-Type': 'application/json; charset=utf-8' } : {}),
  });
  res.end(payload ?? undefined);
}

export function createAdminHandler(
  sim: RunningSimulator,
  log: Logger,
): (
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  query: URLSearchParams,
  body: string,
) => Promise<void> {
  return async (req, res, path, query, body) => {
    const method = (req.method ?? 'GET').toUpperCase();
    const segs = path.split('/').filter(Boolean).slice(1).map(decodeURIComponent);
    try {
      const out = route(sim, method, segs, query, body);
      if (out === undefined) send(res, 204);
      else send(res, 200, out);
    } catch (err) {
      const status = err instanceof AdminError ? err.status : 400;
      const message = err instanceof Error ? err.message : String(err);
      log.debug('Admin call refused', { method, path, status, message });
      send(res, status, { error: message });
    }
  };
}

function route(
  sim: RunningSimulator,
  method: string,
  segs: string[],
  query: URLSearchParams,
  body: string,
): unknown {
  const [a, b, c] = segs;
  switch (true) {
    case method === 'GET' && segs.length === 0:
    case method === 'GET' && a === 'state' && segs.length === 1:
      return sim.state();
    case method === 'GET' && a === 'runners' && segs.length === 1:
      return sim.registrations(runnerFilter(query));
    case method === 'GET' && a === 'runners' && segs.length === 2: {
      const r = sim.runner(b);
      if (!r) throw new AdminError(404, `no runner registered with name "${b}"`);
      return r;
    }
    case method === 'GET' && a === 'jobs' && segs.length === 1:
      return sim.jobs(jobFilter(query));
    case method === 'GET' && a === 'jobs' && segs.length === 2: {
      const j = sim.job(b);
      if (!j) throw new AdminError(404, `no job with id ${b}`);
      return j;
    }
    case method === 'GET' && a === 'sessions' && segs.length === 1:
      return sim.sessions();
    case method === 'GET' && a === 'scalesets' && segs.length === 1:
      return sim.scaleSets();
    case method === 'GET' && a === 'scalesets' && segs.length === 2: {
      const ss = sim.scaleSet(positiveInt(b, 'scale set id'));
      if (!ss) throw new AdminError(404, `no scale set with id ${b}`);
      return ss;
    }
    case method === 'DELETE' && a === 'scalesets' && segs.length === 2: {
      const id = positiveInt(b, 'scale set id');
      if (!sim.scaleSet(id)) throw new AdminError(404, `no scale set with id ${b}`);
      sim.deleteScaleSet(id);
      return undefined;
    }
    case method === 'POST' && a === 'scalesets' && segs.length === 1: {
      const j = obj(body);
      return sim.createScaleSet(owner(j.owner), scaleSetOptions(j));
    }
    case method === 'GET' && a === 'apps' && segs.length === 1:
      return sim.apps();

    case method === 'POST' && a === 'enterprises' && segs.length === 1:
      sim.createEnterprise(str(obj(body), 'name'));
      return undefined;
    case method === 'POST' && a === 'orgs' && segs.length === 1: {
      const j = obj(body);
      sim.createOrg(str(j, 'name'), typeof j.enterprise === 'string' ? j.enterprise : undefined);
      return undefined;
    }
    case method === 'POST' && a === 'repos' && segs.length === 1:
      sim.createRepo(str(obj(body), 'fullName'));
      return undefined;
    case method === 'POST' && a === 'pats' && segs.length === 1: {
      const j = obj(body);
      sim.addPat(str(j, 'token'), Array.isArray(j.owners) ? j.owners.map(owner) : undefined);
      return undefined;
    }
    case method === 'POST' && a === 'apps' && segs.length === 1:
      return sim.registerApp(obj(body) as unknown as AppSeed);
    case method === 'POST' && a === 'apps' && c === 'installations' && segs.length === 3:
      return { installationId: sim.installApp(Number(b), owner(obj(body).owner)) };
    case method === 'POST' && a === 'runner-groups' && segs.length === 1: {
      const j = obj(body);
      return { id: sim.createRunnerGroup(owner(j.owner), str(j, 'name')) };
    }
    case method === 'PUT' && a === 'token-lifetimes' && segs.length === 1:
      return sim.setTokenLifetimes(obj(body));
    case method === 'PUT' && a === 'timing' && segs.length === 1:
      return sim.setTiming(obj(body));
    case method === 'PUT' && a === 'scaleset-labels' && segs.length === 1: {
      const mode = str(obj(body), 'extraLabels');
      if (mode !== 'kept' && mode !== 'ignored')
        throw new AdminError(400, '"extraLabels" must be kept or ignored');
      sim.setExtraScaleSetLabels(mode);
      return { extraLabels: mode };
    }
    case method === 'POST' && a === 'clock' && b === 'advance' && segs.length === 2: {
      const ms = obj(body).ms;
      if (typeof ms !== 'number') throw new AdminError(400, '"ms" must be a number');
      sim.advanceClock(ms);
      return { now: sim.now().toISOString() };
    }
    case method === 'POST' && a === 'tokens' && b === 'expire' && segs.length === 2: {
      const j = obj(body);
      if (j.admin !== false) sim.expireAdminTokens();
      if (j.queue !== false) sim.expireQueueTokens();
      return undefined;
    }
    case method === 'POST' && a === 'timeouts' && b === 'check' && segs.length === 2:
      sim.checkTimeouts();
      return undefined;

    case method === 'POST' && a === 'jobs' && segs.length === 1:
      return sim.enqueueJob(obj(body) as EnqueueJobOptions);
    case method === 'POST' && a === 'jobs' && c === 'complete' && segs.length === 3: {
      const result = obj(body).result ?? 'succeeded';
      if (typeof result !== 'string') throw new AdminError(400, '"result" must be a string');
      return sim.completeJob(b, result as JobResult);
    }
    case method === 'POST' && a === 'runners' && c === 'connect' && segs.length === 3:
      return sim.runnerConnected(b);
    case method === 'POST' && a === 'runners' && c === 'assign' && segs.length === 3:
      return sim.assignJobToRunner(b, jobSelector(obj(body)));
    case method === 'POST' && a === 'runners' && c === 'start' && segs.length === 3:
      return sim.startJob(b, jobSelector(obj(body)));
    case method === 'POST' && a === 'runners' && c === 'exit' && segs.length === 3: {
      const code = obj(body).exitCode;
      if (typeof code !== 'number') throw new AdminError(400, '"exitCode" must be a number');
      sim.runnerExited(b, code);
      return undefined;
    }

    case method === 'GET' && a === 'calls' && segs.length === 1: {
      const route = query.get('route');
      return route ? { [route]: sim.callCount(route) } : sim.callCounts();
    }
    case method === 'DELETE' && a === 'calls' && segs.length === 1:
      sim.resetCallCounts();
      return undefined;
    case method === 'GET' && a === 'faults' && segs.length === 1:
      return sim.faults();
    case method === 'POST' && a === 'faults' && segs.length === 1:
      return { id: sim.injectFault(obj(body) as unknown as FaultSpec) };
    case method === 'DELETE' && a === 'faults' && segs.length === 1:
      sim.clearFaults();
      return undefined;
    case method === 'DELETE' && a === 'faults' && segs.length === 2:
      sim.removeFault(Number(b));
      return undefined;
    case method === 'GET' && a === 'fault-windows' && segs.length === 1:
      return sim.faultWindows();
    case method === 'POST' && a === 'fault-windows' && segs.length === 1:
      return sim.openFaultWindow(obj(body) as Partial<FaultWindowSpec>);
    case method === 'DELETE' && a === 'fault-windows' && segs.length === 1:
      sim.closeFaultWindows();
      return undefined;
    default:
      throw new AdminError(404, `no admin operation ${method} /_sim/${segs.join('/')}`);
  }
}
