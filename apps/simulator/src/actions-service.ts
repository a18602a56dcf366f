import type { Logger } from '@aro/observability';
import type { GitHubAccounts } from './accounts';
import { checkJobTimeouts } from './actions/job-timeouts';
import { Jobs } from './actions/jobs';
import { Registrations } from './actions/registrations';
import { RunnerSimulation } from './actions/runner-simulation';
import { ScaleSets } from './actions/scale-sets';
import { Sessions } from './actions/sessions';
import { ActionsStore } from './actions/store';
import type { TimingOptions, TokenLifetimes } from './types';

export type { JitConfigPayload, Session } from './actions/model';

/**
 * The simulated Actions service: one store of state (`actions/store.ts`) and the parts that act on
 * it, one concern each. All protocol routes and all admin operations go through these parts, so what
 * a test inspects is exactly what the wire saw.
 */
export class ActionsService {
  /** Tenants, runner groups and scale sets. */
  readonly scaleSets: ScaleSets;
  /** Runner registrations (JIT configs). */
  readonly registrations: Registrations;
  /** Message sessions and their long polls. */
  readonly sessions: Sessions;
  /** Jobs: queue, offers, acquisition, assignment to runners. */
  readonly jobs: Jobs;
  /** Runner processes as tests drive them (admin). */
  readonly runners: RunnerSimulation;
  private readonly store: ActionsStore;

  constructor(
    accounts: GitHubAccounts,
    now: () => number,
    timing: TimingOptions,
    lifetimes: TokenLifetimes,
    origin: () => string,
    log: Logger,
  ) {
    this.store = new ActionsStore(accounts, now, timing, lifetimes, origin, log);
    this.jobs = new Jobs(this.store);
    this.sessions = new Sessions(this.store, this.jobs);
    this.registrations = new Registrations(this.store);
    this.scaleSets = new ScaleSets(this.store, this.sessions, this.jobs);
    this.runners = new RunnerSimulation(this.store, this.jobs);
  }

  /** Re-offers unacquired jobs and cancels acquired jobs no runner started, per `timing`. */
  checkTimeouts(): void {
    checkJobTimeouts(this.store, this.jobs);
  }

  /** Ends open long polls and auto-complete timers (simulator stop). */
  shutdown(): void {
    this.sessions.closeAllPolls();
    this.jobs.clearTimers();
  }
}
