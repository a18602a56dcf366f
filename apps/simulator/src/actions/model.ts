import type { Tenant } from '../accounts';
import type { MessageQueue } from '../message-queue';
import type { JobView, ScaleSetLabel } from '../types';

/**
 * The records the simulated Actions service keeps. They are plain data: which part of the service may
 * change which field is decided by the classes beside this file, each of one concern.
 */

export const ZERO_TIME = '0001-01-01T00:00:00Z';

export interface RunnerGroup {
  id: number;
  name: string;
  isDefault: boolean;
}

export interface TenantState {
  tenant: Tenant;
  groups: Map<number, RunnerGroup>;
  nextGroupId: number;
}

export interface ScaleSet {
  id: number;
  tenantId: string;
  name: string;
  runnerGroupId: number;
  labels: ScaleSetLabel[];
  runnerSetting: Record<string, unknown>;
  createdOn: string;
  maxCapacity: number | null;
}

export interface Runner {
  id: number;
  name: string;
  tenantId: string;
  scaleSetId: number;
  online: boolean;
  jobId: string | null;
  /**
   * The job that started on it, once one has. Every runner registered through `generatejitconfig` is
   * ephemeral: the real service hands it one job and never another, even while it is still online
   * reporting that job's end, so a spent runner is never picked again.
   */
  ranJobId: string | null;
  workFolder: string;
  createdOn: string;
}

export interface Session {
  id: string;
  tenantId: string;
  scaleSetId: number;
  ownerName: string;
  queueToken: string;
  queueTokenExpiresAt: number;
  lastActivity: number;
  queue: MessageQueue;
  closed: AbortController;
}

/** A job as the service keeps it: what JobView shows, plus the bookkeeping of offers and timers. */
export interface Job extends JobView {
  offeredAt: number;
  acquiredAt: number;
  durationMs: number | null;
  autoComplete: NodeJS.Timeout | null;
}

export interface JitConfigPayload {
  runnerId: number;
  runnerName: string;
  runnerScaleSetId: number;
  tenantId: string;
  workFolder: string;
  simulatorUrl: string;
}
