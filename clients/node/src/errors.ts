// Copyright (c) 2026, the dlock developers
// The typed errors of the client.

/** The SQLSTATE dlock raises for a stale fencing token. */
export const STALE_TOKEN_SQLSTATE = "LK001";

/** The base class of every error this client raises. */
export class DlockError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The lease stayed held by somebody else for the whole `wait`. */
export class BusyError extends DlockError {
  readonly lockName: string;
  readonly wait: number;

  constructor(lockName: string, wait: number) {
    super(`lease "${lockName}" is held by somebody else` +
      (wait > 0 ? ` (waited ${wait} ms)` : ""));
    this.lockName = lockName;
    this.wait = wait;
  }
}

/**
 * The lease was lost: a renewal was refused, none got through before the
 * lease's deadline, the server refused the token, or the release found the
 * lease no longer held (the work overran its lease).  Stop, and write
 * nothing more under it.
 */
export class LeaseLostError extends DlockError {
  readonly lockName: string;
  readonly token: bigint;
  readonly reason: string;

  constructor(lockName: string, token: bigint, reason: string, options?: ErrorOptions) {
    super(`lease "${lockName}" (token ${token}) was lost: ${reason}`, options);
    this.lockName = lockName;
    this.token = token;
    this.reason = reason;
  }
}

/**
 * The server refused a token as stale (SQLSTATE LK001), in `lease.fence()`
 * or in a fenced write (see `staleTokenError()`).  The transaction it
 * happened in is aborted: roll it back, and write nothing more under this
 * lease.  `cause` is the error of node-postgres.
 */
export class StaleTokenError extends DlockError {
  readonly sqlstate = STALE_TOKEN_SQLSTATE;
  readonly lockName: string | undefined;
  readonly token: bigint | undefined;

  constructor(cause: unknown, lockName?: string, token?: bigint) {
    super(stale(cause, lockName, token), { cause });
    this.lockName = lockName;
    this.token = token;
  }
}

function stale(cause: unknown, lockName?: string, token?: bigint): string {
  const detail = typeof cause === "object" && cause !== null && "detail" in cause &&
    typeof (cause as { detail: unknown }).detail === "string"
    ? `: ${(cause as { detail: string }).detail}` : "";
  const which = lockName === undefined ? "" : ` (lease "${lockName}", token ${token})`;
  return `stale fencing token${which}: ${messageOf(cause)}${detail}`;
}

/**
 * dlock's functions are not there: the extension is not installed in the
 * database, or its schema is not on the connection's search_path.
 */
export class NotInstalledError extends DlockError {}

/**
 * No client of the pool came within the call's bound (the pool is
 * exhausted: every client is checked out, or a new connection does not
 * come up): nothing was sent to the server, so nothing can have committed.
 */
export class NoConnectionError extends DlockError {}

/** True for a node-postgres error with SQLSTATE LK001 (a stale token). */
export function isStaleToken(err: unknown): boolean {
  return sqlstateOf(err) === STALE_TOKEN_SQLSTATE;
}

/**
 * A fenced write refused by a `dlock_fence()` trigger raises node-postgres's
 * own error with SQLSTATE LK001; this turns it into a `StaleTokenError`
 * (other errors are returned unchanged).  Use it as
 * `catch (e) { throw staleTokenError(e) }`.
 */
export function staleTokenError(err: unknown, lockName?: string, token?: bigint): unknown {
  return isStaleToken(err) ? new StaleTokenError(err, lockName, token) : err;
}

export function sqlstateOf(err: unknown): string | undefined {
  if (typeof err === "object" && err !== null && "code" in err) {
    const code = (err as { code: unknown }).code;
    return typeof code === "string" ? code : undefined;
  }
  return undefined;
}

export function messageOf(err: unknown): string {
  if (err instanceof Error) {
    return err.message;
  }
  return String(err);
}
