/**
 * The retention sweep's state, as a port: a lock per tenant, so at most one instance sweeps a
 * tenant at a time and none releases another's lock, and each tenant's last sweep (a later
 * sweep's record stands). A memory implementation (`memory-store.ts`, for the unit tests) and a
 * Redis one (`redis-store.ts`) behave the same.
 */
import type { SweepRecord } from "./status.ts";

export interface TenantLock {
  /** The value this sweep set. */
  readonly value: string;
  /** Lengthens the lock by `ms` from now; false when it is no longer this sweep's. */
  extend(ms: number): Promise<boolean>;
  /** Releases it when it is still this sweep's. */
  release(): Promise<void>;
}

export interface RetentionStore {
  /** Takes the tenant's lock for `ms`; else says which instance holds it. */
  lock(tenant: string, instance: string, ms: number): Promise<{ readonly lock: TenantLock } | { readonly heldBy: string }>;
  /** Keeps a tenant's last sweep, unless a later one is kept already. */
  record(r: SweepRecord): Promise<boolean>;
  /** Every tenant's last sweep, or one tenant's. */
  last(tenant?: string): Promise<SweepRecord[]>;
}
