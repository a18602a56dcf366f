import type * as Undici from 'undici';

/*
 * The parts of undici the Actions client uses, each required from its own module. undici's index also
 * loads fetch, WebSocket, EventSource, the caches and the mocks (110 modules against 37 here), which
 * cost a listener pod ~13 MiB of RSS at start for code it never runs (docs/performance.md, "The
 * listener"). undici's version is pinned (package.json) and its package has no `exports` map, so these
 * paths are part of what a version bump checks (the Actions client's specs and the listener's
 * integration tests run through them). They are the very module files the index loads, so a process
 * that loads both (the controller, tests) still has one Agent class, one Pool class.
 */
/* eslint-disable @typescript-eslint/no-require-imports -- undici ships no types for its inner modules */
const DispatcherBase = require('undici/lib/dispatcher/dispatcher') as typeof Undici.Dispatcher;
// What undici's index does when it loads: every dispatcher gets request/stream/pipeline/upgrade/connect.
// Assigning the same functions again (the index loaded too) changes nothing.
Object.assign(DispatcherBase.prototype, require('undici/lib/api') as object);

export const Agent = require('undici/lib/dispatcher/agent') as typeof Undici.Agent;
export const Pool = require('undici/lib/dispatcher/pool') as typeof Undici.Pool;
export const ProxyAgent = require('undici/lib/dispatcher/proxy-agent') as typeof Undici.ProxyAgent;
export const EnvHttpProxyAgent =
  require('undici/lib/dispatcher/env-http-proxy-agent') as typeof Undici.EnvHttpProxyAgent;
/* eslint-enable @typescript-eslint/no-require-imports */
export type Agent = Undici.Agent;
export type Pool = Undici.Pool;
export type ProxyAgent = Undici.ProxyAgent;
export type EnvHttpProxyAgent = Undici.EnvHttpProxyAgent;
