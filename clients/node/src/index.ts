// Copyright (c) 2026, the dlock developers
// dlock for node-postgres: lease locks with fencing tokens, renewed for you,
// with an AbortSignal aborted the moment a lease is lost.

export { Lease, acquire, withLease, defaultLogger, ACQUIRE_MARGIN, RELEASE_MAX, RELEASE_MIN,
  OWNER_MAX_BYTES } from "./lease";
export type { LeaseOptions, Logger } from "./lease";
export { Leader, leader, lead } from "./leader";
export type { LeaderOptions } from "./leader";
export { DlockError, BusyError, LeaseLostError, StaleTokenError, NotInstalledError,
  NoConnectionError, STALE_TOKEN_SQLSTATE, isStaleToken, staleTokenError } from "./errors";
