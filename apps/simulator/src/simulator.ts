import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger, type Logger } from '@aro/observability';
import { GitHubAccounts } from './accounts';
import { ActionsService } from './actions-service';
import { createAdminHandler } from './admin-http';
import { CallCounters, FaultInjector } from './faults';
import { FaultWindows, type FaultWindowSpec, type FaultWindowView } from './fault-windows';
import { createRequestHandler } from './http';
import { buildRoutes } from './routes';
import { DEFAULT_TIMING, DEFAULT_TOKEN_LIFETIMES, defaultSeed } from './seed';
import type {
  AppSeed,
  CreateScaleSetOptions,
  EnqueueJobOptions,
  FaultSpec,
  JobFilter,
  JobResult,
  JobView,
  OwnerRef,
  RegisteredApp,
  RunnerFilter,
  RunnerView,
  ScaleSetView,
  SeedOptions,
  SessionView,
  SimulatorStateView,
  TimingOptions,
  TokenLifetimes,
} from './types';

export interface StartSimulatorOptions {
  /** 0 (default) = a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  seed?: SeedOptions;
  /** Default: silent. */
  logger?: Logger;
  /** Seed of the generator that decides `errorRate` faults. */
  faultRandomSeed?: number;
  /**
   * The origin written into URLs the simulator hands out (Actions base URL, message queue URL, JIT
   * config), when clients reach it by another name than host:port (e.g. from pods in a cluster).
   */
  publicUrl?: string;
}

/**
 * A running simulator: the HTTP origin clients talk to, plus every admin operation as a method so
 * tests can drive and inspect it in process. The same operations are served over HTTP under `/_sim`.
 */
export class RunningSimulator {
  readonly url: string;
  /** The port actually listened on (the chosen one when `port: 0`). */
  port = 0;
  private clockOffsetMs = 0;
  private readonly accounts: GitHubAccounts;
  private readonly actions: ActionsService;
  private readonly faultInjector: FaultInjector;
  private readonly counters = new CallCounters();
  private readonly stopping = new AbortController();
  private readonly lifetimes: TokenLifetimes;
  private readonly timingOptions: TimingOptions;
  private sweep: NodeJS.Timeout | null = null;
  private readonly windows = new FaultWindows(this);
  private server: Server | null = null;
  private stopped: Promise<void> | null = null;
  /**
   * Awaited after a removal of a registration through the API, before the caller is answered: a test
   * sees the world as it was at the moment the service let the runner go (what else had happened).
   */
  onRunnerRemoved?: (runner: RunnerView) => Promise<void>;

  /** Use `startSimulator`. */
  constructor(
    private readonly log: Logger,
    opts: StartSimulatorOptions,
    private readonly origin: string,
  ) {
    this.url = origin;
    const seed = opts.seed ?? {};
    this.lifetimes = { ...DEFAULT_TOKEN_LIFETIMES, ...seed.tokenLifetimes };
    this.timingOptions = { ...DEFAULT_TIMING, ...seed.timing };
    this.faultInjector = new FaultInjector(opts.faultRandomSeed);
    const now = (): number => Date.now() + this.clockOffsetMs;
    this.accounts = new GitHubAccounts(now, this.lifetimes, (tenant) =>
      this.actions.scaleSets.addTenant(tenant),
    );
    this.actions = new ActionsService(
      this.accounts,
      now,
      this.timingOptions,
      this.lifetimes,
      () => this.origin,
      log,
    );
    this.applySeed(seed);
  }

  /** @internal wires the server once it listens. */
  attach(server: Server): void {
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    const routes = buildRoutes({
      accounts: this.accounts,
      actions: this.actions,
      timing: this.timingOptions,
      origin: () => this.origin,
      onRunnerRemoved: (runner) => this.onRunnerRemoved?.(runner) ?? Promise.resolve(),
    });
    server.on(
      'request',
      createRequestHandler({
        routes,
        faults: this.faultInjector,
        counters: this.counters,
        log: this.log,
        stopping: this.stopping.signal,
        admin: createAdminHandler(this, this.log),
      }),
    );
    this.restartSweep();
  }

  private restartSweep(): void {
    if (this.sweep) clearInterval(this.sweep);
    this.sweep = setInterval(
      () => this.actions.checkTimeouts(),
      Math.max(10, this.timingOptions.sweepIntervalMs),
    );
    this.sweep.unref();
  }

  private applySeed(seed: SeedOptions): void {
    const base = seed.defaults === false ? { enterprises: [], orgs: [], repos: [], pats: [] } : defaultSeed();
    for (const e of [...base.enterprises, ...(seed.enterprises ?? [])]) this.createEnterprise(e);
    for (const o of [...base.orgs, ...(seed.orgs ?? [])]) this.createOrg(o.name, o.enterprise);
    for (const r of [...base.repos, ...(seed.repos ?? [])]) this.createRepo(r);
    for (const p of [...base.pats, ...(seed.pats ?? [])]) this.addPat(p.token, p.owners);
    for (const a of seed.apps ?? []) this.registerApp(a);
    for (const g of seed.runnerGroups ?? []) this.createRunnerGroup(g.owner, g.name);
  }

  // ---- addressing ----------------------------------------------------------------------------

  /** The config URL a client (or an AutoscalingRunnerSet's githubConfigUrl) uses for an owner. */
  configUrl(owner: OwnerRef): string {
    if ('enterprise' in owner) return `${this.url}/enterprises/${encodeURIComponent(owner.enterprise)}`;
    const org = encodeURIComponent(owner.org);
    return owner.repo ? `${this.url}/${org}/${encodeURIComponent(owner.repo)}` : `${this.url}/${org}`;
  }

  /** The Actions-service tenant id of an owner (the `<id>` in `/tenant/<id>/`). */
  tenantId(owner: OwnerRef): string {
    return this.accounts.tenantFor(owner).id;
  }

  // ---- accounts and credentials --------------------------------------------------------------

  createEnterprise(name: string): void {
    this.accounts.createEnterprise(name);
  }

  createOrg(name: string, enterprise?: string): void {
    this.accounts.createOrg(name, enterprise);
  }

  /** `owner/name`; creates the owner org when missing. */
  createRepo(fullName: string): void {
    this.accounts.createRepo(fullName);
  }

  /** A PAT valid for `owners` (absent = every owner). */
  addPat(token: string, owners?: OwnerRef[]): void {
    this.accounts.addPat(token, owners);
  }

  registerApp(app: AppSeed): RegisteredApp {
    return this.accounts.registerApp(app);
  }

  /** Installs an app on an owner; returns the installation id. */
  installApp(appId: number, owner: OwnerRef): number {
    return this.accounts.installApp(appId, owner);
  }

  apps(): RegisteredApp[] {
    return this.accounts.listApps();
  }

  /** Creates (or finds) a runner group in the owner's tenant; returns its id. */
  createRunnerGroup(owner: OwnerRef, name: string): number {
    return this.actions.scaleSets.createRunnerGroup(this.accounts.tenantFor(owner).id, name);
  }

  /**
   * Creates a scale set in the owner's tenant without a protocol call (sandbox, manual debugging):
   * the same state `POST runnerscalesets` makes, with the same refusals (duplicate name, unknown group).
   */
  createScaleSet(owner: OwnerRef, opts: CreateScaleSetOptions): ScaleSetView {
    const tenantId = this.accounts.tenantFor(owner).id;
    const runnerGroupId =
      opts.runnerGroup !== undefined
        ? this.actions.scaleSets.createRunnerGroup(tenantId, opts.runnerGroup)
        : opts.runnerGroupId;
    const created = this.actions.scaleSets.create(tenantId, {
      name: opts.name,
      runnerGroupId,
      labels: (opts.labels ?? []).map((name) => ({ name, type: 'System' })),
      RunnerSetting: opts.runnerSetting ?? {},
    });
    const view = this.scaleSet(Number(created.id));
    if (!view) throw new Error(`scale set ${String(created.id)} vanished right after its creation`);
    return view;
  }

  /**
   * Deletes a scale set as GitHub does to one that stayed offline too long (or as a person does in the
   * settings page): the same as `DELETE runnerscalesets/{id}` without a protocol call. Its sessions
   * close, its runners go, running jobs complete `canceled` and the rest go back to the queue.
   */
  deleteScaleSet(id: number): void {
    const view = this.scaleSet(id);
    if (!view) throw new Error(`no scale set with id ${id}`);
    this.actions.scaleSets.delete(view.tenantId, id);
  }

  /**
   * Answers scale set labels as GHES before 3.18 does (`ignored`: only the name label is kept, the
   * others dropped without an error) or as the current service does (every label kept).
   */
  setExtraScaleSetLabels(mode: 'kept' | 'ignored'): void {
    this.actions.scaleSets.extraLabelsIgnored = mode === 'ignored';
  }

  setTokenLifetimes(lifetimes: Partial<TokenLifetimes>): TokenLifetimes {
    Object.assign(this.lifetimes, lifetimes);
    return { ...this.lifetimes };
  }

  tokenLifetimes(): TokenLifetimes {
    return { ...this.lifetimes };
  }

  setTiming(timing: Partial<TimingOptions>): TimingOptions {
    const sweepChanged =
      timing.sweepIntervalMs !== undefined && timing.sweepIntervalMs !== this.timingOptions.sweepIntervalMs;
    Object.assign(this.timingOptions, timing);
    if (sweepChanged && this.server) this.restartSweep();
    return { ...this.timingOptions };
  }

  timing(): TimingOptions {
    return { ...this.timingOptions };
  }

  /**
   * Moves the simulator's clock forward (token expiry, session idleness, job timeouts) without
   * waiting; then runs the timeout sweep once.
   */
  advanceClock(ms: number): void {
    if (!(ms >= 0)) throw new Error(`advanceClock needs a non-negative number of ms, got ${ms}`);
    this.clockOffsetMs += ms;
    this.actions.checkTimeouts();
  }

  now(): Date {
    return new Date(Date.now() + this.clockOffsetMs);
  }

  /** Every admin JWT issued so far answers 401 from now on. */
  expireAdminTokens(): void {
    this.accounts.revokeAdminTokens();
  }

  /** Every message-queue token answers 401 until its session is refreshed. */
  expireQueueTokens(): void {
    this.actions.sessions.expireQueueTokens();
  }

  // ---- jobs and runners ----------------------------------------------------------------------

  enqueueJob(opts: EnqueueJobOptions): JobView {
    return this.actions.jobs.enqueue(opts);
  }

  /** The runner of a JIT config came online (idle). */
  runnerConnected(runnerName: string): RunnerView {
    return this.actions.runners.connected(runnerName);
  }

  /** Binds a job to the runner without starting it; removal of the runner then fails with JobStillRunning. */
  assignJobToRunner(runnerName: string, job?: string | EnqueueJobOptions): JobView {
    return this.actions.runners.assignJob(runnerName, job);
  }

  /** Starts a job on the runner (assigning one first if needed): JobStarted with runnerId/runnerName. */
  startJob(runnerName: string, job?: string | EnqueueJobOptions): JobView {
    return this.actions.runners.startJob(runnerName, job);
  }

  completeJob(jobId: string, result: JobResult = 'succeeded'): JobView {
    return this.actions.runners.completeJob(jobId, result);
  }

  /** The runner process exited; exit 0 removes its registration (ephemeral runners deregister themselves). */
  runnerExited(runnerName: string, exitCode: number): void {
    this.actions.runners.exited(runnerName, exitCode);
  }

  /** Runs the job timeout sweep now (re-offers, start timeouts); it also runs every `sweepIntervalMs`. */
  checkTimeouts(): void {
    this.actions.checkTimeouts();
  }

  // ---- inspection ----------------------------------------------------------------------------

  registrations(filter: RunnerFilter = {}): RunnerView[] {
    return this.actions.registrations
      .views()
      .filter(
        (r) =>
          (filter.scaleSetId === undefined || r.scaleSetId === filter.scaleSetId) &&
          (filter.status === undefined || r.status === filter.status),
      );
  }

  runner(name: string): RunnerView | undefined {
    return this.registrations().find((r) => r.name.toLowerCase() === name.toLowerCase());
  }

  jobs(filter: JobFilter = {}): JobView[] {
    return this.actions.jobs
      .views()
      .filter(
        (j) =>
          (filter.state === undefined || j.state === filter.state) &&
          (filter.scaleSetId === undefined || j.scaleSetId === filter.scaleSetId),
      );
  }

  job(jobId: string): JobView | undefined {
    return this.jobs().find((j) => j.jobId === jobId);
  }

  sessions(): SessionView[] {
    return this.actions.sessions.views();
  }

  /**
   * Forgets a message session, as the service does to one whose listener stopped polling for a while:
   * the listener's next call on it fails, and it has to create a new session.
   */
  expireSession(sessionId: string): void {
    const view = this.sessions().find((s) => s.sessionId === sessionId);
    if (!view) throw new Error(`no session ${sessionId}`);
    this.actions.sessions.delete(view.tenantId, view.scaleSetId, sessionId);
  }

  scaleSets(): ScaleSetView[] {
    return this.actions.scaleSets.views();
  }

  scaleSet(id: number): ScaleSetView | undefined {
    return this.scaleSets().find((s) => s.id === id);
  }

  state(): SimulatorStateView {
    return {
      scaleSets: this.scaleSets(),
      runners: this.registrations(),
      jobs: this.jobs(),
      sessions: this.sessions(),
    };
  }

  /** Calls per route, keyed `METHOD template` (e.g. `DELETE agents/{id}`); unmatched calls under `METHOD <unmatched>`. */
  callCounts(): Record<string, number> {
    return this.counters.snapshot();
  }

  callCount(routeKey: string): number {
    return this.counters.get(routeKey);
  }

  resetCallCounts(): void {
    this.counters.reset();
  }

  // ---- faults --------------------------------------------------------------------------------

  injectFault(spec: FaultSpec): number {
    const id = this.faultInjector.add(spec);
    this.log.info('Injected fault', { id, ...spec });
    return id;
  }

  removeFault(id: number): void {
    this.faultInjector.remove(id);
  }

  clearFaults(): void {
    this.faultInjector.clear();
  }

  faults(): Array<FaultSpec & { id: number; remaining: number | null }> {
    return this.faultInjector.list();
  }

  /** A fault window (fault-windows.ts): a share of calls faulted for `seconds`, then healthy again. */
  openFaultWindow(spec: Partial<FaultWindowSpec>): FaultWindowView {
    const view = this.windows.open(spec);
    this.log.info('Opened a fault window', { ...view });
    return view;
  }

  faultWindows(): FaultWindowView[] {
    return this.windows.list();
  }

  closeFaultWindows(): void {
    this.windows.closeAll();
  }

  // ---- lifecycle -----------------------------------------------------------------------------

  /** Ends long polls, closes every connection and the listening socket. Idempotent. */
  stop(): Promise<void> {
    if (this.stopped) return this.stopped;
    this.stopping.abort();
    this.windows.closeAll();
    if (this.sweep) clearInterval(this.sweep);
    this.actions.shutdown();
    const server = this.server;
    this.stopped = new Promise<void>((resolve) => {
      if (!server) return resolve();
      server.close(() => resolve());
      server.closeAllConnections();
    });
    return this.stopped;
  }
}

export async function startSimulator(opts: StartSimulatorOptions = {}): Promise<RunningSimulator> {
  const host = opts.host ?? '127.0.0.1';
  const log = (opts.logger ?? createLogger({ level: 'silent' })).child({ component: 'simulator' });
  const server = createServer({ keepAlive: true });
  // A long poll may be held ~50 s; node's defaults would cut idle keep-alive sockets sooner than clients expect.
  server.keepAliveTimeout = 65_000;
  server.requestTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const hostForUrl = host.includes(':') ? `[${host}]` : host;
  const origin = opts.publicUrl ? opts.publicUrl.replace(/\/+$/, '') : `http://${hostForUrl}:${port}`;
  let sim: RunningSimulator;
  try {
    sim = new RunningSimulator(log, opts, origin);
  } catch (err) {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    throw err;
  }
  sim.attach(server);
  log.info('Simulator listening', { url: sim.url });
  return sim;
}
