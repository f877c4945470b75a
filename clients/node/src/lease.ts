// Copyright (c) 2026, the dlock developers
// A lease: acquire, renew on a connection of its own, release, fence.
//
// The failure model is the Python client's (clients/python/README.md, and
// docs/clients.md): a lease is lost when a renewal is refused, when no
// renewal got through before its deadline (the last expiry the server
// confirmed, counted from when that confirmation was asked for), when the
// server refuses its token, or when the release finds it no longer held.
// The client never decides with the server's expiry alone and never
// extends a lease the server did not confirm.

import { randomBytes } from "node:crypto";
import type { ClientBase, Pool } from "pg";

import { NoAnswer, NoPoolClient, OwnConnection, clientFactory, fromServer, mono, run, within,
  withPoolClient } from "./connection";
import { BusyError, DlockError, LeaseLostError, NoConnectionError, NotInstalledError,
  StaleTokenError,
  isStaleToken, messageOf, sqlstateOf } from "./errors";

/** Where the client reports what the application should know of. */
export interface Logger {
  warn(message: string): void;
  info?(message: string): void;
  debug?(message: string): void;
}

/** The default logger: warnings as process warnings (type DlockWarning), nothing else. */
export const defaultLogger: Logger = {
  warn(message: string): void {
    process.emitWarning(message, { type: "DlockWarning" });
  },
};

export interface LeaseOptions {
  /** Time to live, in milliseconds. */
  ttl: number;
  /** How long to wait for a held lease, in milliseconds (default 0: never wait). */
  wait?: number;
  /**
   * A label for the holder (a host name, a service), 1 to 200 bytes; the
   * server sees `<owner>:<pid>:<random>` (`lease.ownerId`), new for every
   * lease, so two leases never share a token.
   */
  owner?: string;
  /** Renew in the background at a third of the ttl (default true). */
  renew?: boolean;
  /** Where warnings go (default: process warnings). */
  logger?: Logger;
}

// The functions are found through the connection's search_path.
const ACQUIRE_SQL = "SELECT dlock_acquire($1::text, $2::interval, $3::interval, $4::text) AS token";
const RENEW_SQL = "SELECT dlock_renew($1::text, $2::bigint, $3::interval) AS ok";
const RELEASE_SQL = "SELECT dlock_release($1::text, $2::bigint) AS ok";
const ASSERT_SQL = "SELECT dlock_assert($1::text, $2::bigint)";
// After an acquire that waited: the time left, on the server's clock.
const REMAINING_SQL =
  "SELECT (extract(epoch FROM dlock_remaining($1::text, $2::bigint)) * 1000)::float8 AS ms";

/** How much longer than its `wait` an acquire may take before it is given up. */
export const ACQUIRE_MARGIN = 5000;
/** A release waits at most min(RELEASE_MAX, max(RELEASE_MIN, the time left)). */
export const RELEASE_MAX = 5000;
export const RELEASE_MIN = 1000;
/** The longest owner label: the server takes 255 bytes, the client adds ":<pid>:<12 hex>". */
export const OWNER_MAX_BYTES = 200;

const NOT_INSTALLED_HINT = "dlock is not installed in this database, or its schema is not on " +
  "search_path: a superuser runs CREATE EXTENSION dlock, and ordinary roles need USAGE on its " +
  "schema (README, Install)";

/** A moment on two clocks: monotonic and wall, both in milliseconds. */
interface Instant {
  mono: number;
  wall: number;
}

function instant(): Instant {
  return { mono: mono(), wall: Date.now() };
}

function interval(ms: number): string {
  return `${ms} milliseconds`;
}

export function checkMs(value: unknown, what: string, zeroOk: boolean): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0 ||
    (value === 0 && !zeroOk)) {
    throw new RangeError(`${what} must be a finite number of milliseconds ` +
      `${zeroOk ? "(0 or more)" : "above 0"}, not ${String(value)}`);
  }
  return value;
}

/**
 * A lone UTF-16 surrogate cannot be sent: node-postgres encodes it as
 * U+FFFD, so two different names would be one lock on the server.
 */
function checkWellFormed(value: string, what: string): string {
  const at = value.search(/[\uD800-\uDFFF]/u);
  if (at >= 0) {
    throw new TypeError(`${what} is not well-formed UTF-16: a lone surrogate ` +
      `(\\u${value.charCodeAt(at).toString(16).toUpperCase()}) at index ${at} would reach the ` +
      "server as U+FFFD, the same lock as other such names; use String.prototype.toWellFormed() " +
      "if that is what you mean");
  }
  return value;
}

/** A lock name: a non-empty, well-formed string. */
export function checkName(name: unknown): string {
  if (typeof name !== "string" || name === "") {
    throw new RangeError("the lease name must be a non-empty string");
  }
  return checkWellFormed(name, "the lease name");
}

/** What the server is sent as the owner: `<owner>:<pid>:<random>`, or null. */
export function makeOwnerId(owner: string | undefined): string | null {
  if (owner === undefined) {
    return null;
  }
  if (typeof owner !== "string" || owner === "") {
    throw new RangeError("owner must be a non-empty string, or left out");
  }
  checkWellFormed(owner, "owner");
  if (Buffer.byteLength(owner) > OWNER_MAX_BYTES) {
    throw new RangeError(`owner must be at most ${OWNER_MAX_BYTES} bytes`);
  }
  return `${owner}:${process.pid}:${randomBytes(6).toString("hex")}`;
}

function describe(err: unknown): string {
  const text = messageOf(err);
  if (sqlstateOf(err) === "42883" && text.includes("dlock_")) {
    return `${text} (${NOT_INSTALLED_HINT})`;
  }
  return text;
}

/** A NotInstalledError for a missing dlock function (42883), or null. */
function notInstalled(err: unknown): NotInstalledError | null {
  if (sqlstateOf(err) === "42883" && messageOf(err).includes("dlock_")) {
    return new NotInstalledError(describe(err), { cause: err });
  }
  return null;
}

type State = "held" | "releasing" | "released" | "lost";

/** How a lease is made (internal: `acquire()` and the leader make them). */
export interface LeaseInit {
  pool: Pool;
  name: string;
  ttl: number;
  owner: string | undefined;
  ownerId: string | null;
  logger: Logger;
  /** Leader terms renew by acquiring again with their owner id. */
  reacquire: boolean;
}

/**
 * A held lease.  `signal` is aborted the moment the lease is lost, with a
 * `LeaseLostError` as its reason; `token` is the fencing token; `fence()`
 * declares it in a transaction; `release()` gives the lease back.
 */
export class Lease {
  readonly name: string;
  /** The owner label as given, or undefined. */
  readonly owner: string | undefined;
  /** What the server sees as the owner: `<owner>:<pid>:<random>`, or null. */
  readonly ownerId: string | null;
  /** The time to live, in milliseconds. */
  readonly ttl: number;

  private readonly pool: Pool;
  private readonly logger: Logger;
  private readonly reacquire: boolean;
  private readonly own: OwnConnection;
  private readonly lossController = new AbortController();
  private readonly stopController = new AbortController();
  private tokenValue = 0n;
  private state: State = "held";
  private asked: Instant = instant(); // when the last confirmation was asked for
  private deadline: Instant = instant(); // until when the lease surely holds
  private lostError: LeaseLostError | null = null;
  private watchdog: NodeJS.Timeout | undefined;
  private renewer: Promise<void> | null = null;
  private releasing: Promise<void> | null = null;
  private renewalDue = Infinity; // mono() when the renewer should have sent
  private lastFailure: string | null = null;

  /** @internal use acquire(), withLease() or leader(). */
  constructor(init: LeaseInit) {
    this.pool = init.pool;
    this.name = init.name;
    this.ttl = init.ttl;
    this.owner = init.owner;
    this.ownerId = init.ownerId;
    this.logger = init.logger;
    this.reacquire = init.reacquire;
    this.own = new OwnConnection(clientFactory(init.pool));
  }

  /** The fencing token (a bigint: tokens outgrow 2^53). */
  get token(): bigint {
    return this.tokenValue;
  }

  /**
   * Aborted the moment the lease is lost, with a `LeaseLostError` as its
   * reason.  Reading it also checks the deadline: after the event loop was
   * blocked past it, the signal read is already aborted.
   */
  get signal(): AbortSignal {
    this.checkDeadline();
    return this.lossController.signal;
  }

  /** True once the lease is lost, or its deadline has passed; false after a clean release. */
  get lost(): boolean {
    this.checkDeadline();
    return this.state === "lost" || (this.state === "releasing" && this.passed());
  }

  /** Why the lease was lost, or null. */
  get lostReason(): string | null {
    return this.lost ? (this.lostError?.reason ?? "not renewed before its deadline") : null;
  }

  /** Milliseconds the lease is sure to be held for; 0 once lost or released. */
  remaining(): number {
    this.checkDeadline();
    if (this.state !== "held" && this.state !== "releasing") {
      return 0;
    }
    return Math.max(0, this.left());
  }

  /** Throw the `LeaseLostError` if the lease is lost. */
  throwIfLost(): void {
    this.checkDeadline();
    if (this.lostError !== null) {
      throw this.lostError;
    }
  }

  /**
   * Declare the token in the client's transaction (`dlock_assert`): fenced
   * writes later in it carry the token, and the lease cannot change hands
   * until it ends.  Call it after BEGIN, on the client of the fenced writes.
   * Throws `StaleTokenError` (and the lease is lost) when the server
   * refuses the token, `LeaseLostError` when the lease is known to be lost
   * already (nothing is sent).
   */
  async fence(client: ClientBase): Promise<void> {
    this.throwIfLost();
    if (this.state !== "held") {
      throw new DlockError(`lease "${this.name}" was released: it cannot fence writes any more`);
    }
    const status = (client as { getTransactionStatus?: () => string | null })
      .getTransactionStatus?.();
    if (status === "I") {
      throw new DlockError("lease.fence() needs a transaction: call it after BEGIN, on the " +
        "client of the fenced writes (a declaration ends with its transaction)");
    }
    try {
      await client.query({ text: ASSERT_SQL, values: [this.name, this.tokenValue.toString()] });
    } catch (err) {
      if (!isStaleToken(err)) {
        throw err;
      }
      this.markLost("the server refused its token as stale", err);
      throw new StaleTokenError(err, this.name, this.tokenValue);
    }
  }

  /**
   * Stop renewing and give the lease back.  Rejects with `LeaseLostError`
   * if the lease was lost or the server says it no longer held it (the
   * work overran its lease).  A second call (or two at once) releases once
   * and answers the same.  Waits at most min(5 s, max(1 s, the time left)):
   * a release without an answer by then is given up, its connection
   * discarded, and the lease expires by itself at its deadline (a warning,
   * no error).
   */
  release(): Promise<void> {
    this.releasing ??= this.finish();
    return this.releasing;
  }

  toString(): string {
    return `Lease(${JSON.stringify(this.name)}, token ${this.tokenValue}, ${this.state})`;
  }

  // --- inside --------------------------------------------------------------

  private left(): number {
    return Math.min(this.deadline.mono - mono(), this.deadline.wall - Date.now());
  }

  /**
   * The deadline has passed on either clock: the monotonic one (which
   * stops while the machine is suspended) or the wall clock (which does
   * not, and whose forward steps can only make the lease end early here).
   */
  private passed(): boolean {
    return this.left() <= 0;
  }

  private checkDeadline(): void {
    if (this.state === "held" && this.passed()) {
      this.markLost(this.deadlineReason());
    }
  }

  private deadlineReason(): string {
    if (this.lastFailure !== null) {
      return `not renewed before its deadline (${this.lastFailure})`;
    }
    if (this.renewer !== null && mono() - this.renewalDue > Math.min(1000, this.ttl / 3)) {
      return "not renewed before its deadline (the renewal did not run in time: the event " +
        "loop was blocked, or the machine suspended)";
    }
    return this.renewer === null
      ? "not renewed before its deadline (renewal is off)"
      : "not renewed before its deadline (no answer from the server)";
  }

  /** The server confirmed the lease for `ms` from `at` (when it was asked). */
  private confirm(at: Instant, ms: number): void {
    this.asked = at;
    this.deadline = { mono: at.mono + ms, wall: at.wall + ms };
  }

  /** Mark the lease lost; the first time, abort the signal. */
  private markLost(reason: string, cause?: unknown): void {
    if (this.state !== "held") {
      return;
    }
    this.state = "lost";
    this.lostError = new LeaseLostError(this.name, this.tokenValue, reason,
      cause === undefined ? undefined : { cause });
    this.stop();
    this.own.discard();
    this.logger.warn(`lease "${this.name}" (token ${this.tokenValue}) lost: ${reason}`);
    this.lossController.abort(this.lostError);
  }

  private stop(): void {
    clearTimeout(this.watchdog);
    this.watchdog = undefined;
    this.stopController.abort();
  }

  /** The watchdog: the loss is reported at the deadline, whatever the renewer is doing. */
  private arm(): void {
    clearTimeout(this.watchdog);
    if (this.state !== "held") {
      return;
    }
    if (this.passed()) {
      this.markLost(this.deadlineReason());
      return;
    }
    // Slices of at most a second: a wall clock that jumped (a suspend) is
    // noticed within one.
    this.watchdog = setTimeout(() => this.arm(), Math.min(this.left(), 1000));
  }

  /** Sleep; true if the lease stopped meanwhile. */
  private pause(ms: number): Promise<boolean> {
    const signal = this.stopController.signal;
    if (signal.aborted) {
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve(signal.aborted);
      };
      const timer = setTimeout(done, Math.max(0, ms));
      signal.addEventListener("abort", done);
    });
  }

  /** @internal Take the lease; BusyError when it stays held. */
  async _acquire(wait: number): Promise<void> {
    const budget = wait + ACQUIRE_MARGIN;
    const what = `acquire of lease "${this.name}"`;
    try {
      await withPoolClient(this.pool, budget, what, async (client, end) => {
        const at = instant();
        const res = await run(client, ACQUIRE_SQL,
          [this.name, interval(this.ttl), interval(wait), this.ownerId], end - mono(), what);
        const token: unknown = res.rows[0]?.token;
        if (token === null || token === undefined) {
          throw new BusyError(this.name, wait);
        }
        this.tokenValue = BigInt(token as string);
        if (wait === 0) {
          // The server's expiry is its clock when it took the lease, plus
          // the ttl: no earlier than `at` plus the ttl here.
          this.confirm(at, this.ttl);
          return;
        }
        // It may have waited: ask how much is left.
        const at2 = instant();
        const rem = await run(client, REMAINING_SQL, [this.name, this.tokenValue.toString()],
          end - mono(), what);
        this.confirm(at2, Math.max(0, Number(rem.rows[0]?.ms ?? 0)));
      });
    } catch (err) {
      if (err instanceof NoPoolClient) {
        throw new NoConnectionError(`${what} got no connection from the pool in ${budget} ms ` +
          "(all its clients are in use, or a new connection did not come up): nothing was sent",
          { cause: err });
      }
      if (err instanceof NoAnswer) {
        this.logger.warn(`${what} got no answer in ${budget} ms: its connection is dropped; ` +
          "if the acquire committed meanwhile, the lease stays busy until it expires by " +
          `itself at its ttl (${this.ttl} ms)`);
        throw new DlockError(`${what} got no answer from the server in ${budget} ms (if it ` +
          "committed, the lease expires by itself at its ttl)", { cause: err });
      }
      throw notInstalled(err) ?? err;
    }
    this.logger.debug?.(`acquired lease "${this.name}" with token ${this.tokenValue}`);
  }

  /** @internal Start the watchdog, and the renewer when asked to. */
  _start(renew: boolean): void {
    this.arm();
    if (renew) {
      this.renewer = this.renewLoop().catch((err: unknown) => {
        this.markLost(`the renewer failed: ${describe(err)}`, err);
      });
    }
  }

  /**
   * Renew at a third of the ttl until stopped or lost.  A renewal that
   * cannot get through (a broken connection, a restart, no answer) is
   * retried on a new connection until the deadline; the watchdog reports
   * the loss then.
   */
  private async renewLoop(): Promise<void> {
    const every = this.ttl / 3;
    const slice = Math.min(Math.max(this.ttl / 10, 20), 1000);
    while (this.state === "held") {
      this.renewalDue = this.asked.mono + every;
      while (mono() < this.renewalDue) {
        if (await this.pause(Math.min(this.renewalDue - mono(), slice))) {
          return;
        }
      }
      this.checkDeadline();
      for (;;) {
        if (this.state !== "held") {
          return;
        }
        const at = instant();
        let ok: boolean;
        try {
          ok = await this.renewOnce(this.left());
        } catch (err) {
          if (this.state !== "held") {
            return;
          }
          // dlock's functions are not found on the lease's own connection
          // (its search_path or role is not the pool's): no retry helps.
          const missing = notInstalled(err);
          if (missing !== null) {
            this.markLost(`renewal failed on the lease's own connection: ${missing.message}`,
              missing);
            return;
          }
          this.lastFailure = describe(err);
          this.logger.info?.(`renewal of lease "${this.name}" failed, retrying: ${this.lastFailure}`);
          this.checkDeadline();
          if (await this.pause(Math.min(slice, Math.max(0, this.left())))) {
            return;
          }
          continue;
        }
        if (!ok) {
          this.markLost("renewal refused: the lease expired or was taken over");
          return;
        }
        if (this.state === "held" || this.state === "releasing") {
          this.confirm(at, this.ttl);
          this.lastFailure = null;
        }
        this.logger.debug?.(`renewed lease "${this.name}" (token ${this.tokenValue})`);
        break;
      }
    }
  }

  private async renewOnce(ms: number): Promise<boolean> {
    const what = `renewal of lease "${this.name}"`;
    if (this.reacquire) {
      const res = await this.own.query(ACQUIRE_SQL,
        [this.name, interval(this.ttl), interval(0), this.ownerId], ms, what);
      // The same token: our owner id still holds it.  NULL: somebody else
      // does.  Another token: it expired and a new term began.
      const token: unknown = res.rows[0]?.token;
      return token !== null && token !== undefined && BigInt(token as string) === this.tokenValue;
    }
    const res = await this.own.query(RENEW_SQL,
      [this.name, this.tokenValue.toString(), interval(this.ttl)], ms, what);
    return res.rows[0]?.ok === true;
  }

  private async finish(): Promise<void> {
    this.checkDeadline();
    if (this.state === "lost") {
      throw this.lostError;
    }
    if (this.state !== "held") {
      return;
    }
    this.state = "releasing";
    this.stop();
    const budget = Math.min(RELEASE_MAX, Math.max(RELEASE_MIN, this.left()));
    const end = mono() + budget;
    const what = `release of lease "${this.name}"`;
    let ok: boolean;
    try {
      if (this.renewer !== null) {
        // A renewal in flight ends first (its connection is the release's).
        await within(this.renewer, budget, what, () => this.own.discard());
      }
      ok = await this.releaseOnce(end - mono(), what);
    } catch (err) {
      this.state = "released";
      this.own.discard();
      if (err instanceof NoPoolClient) {
        throw new NoConnectionError(`${what} got no connection from the pool in ${budget} ms ` +
          "(all its clients are in use, or a new connection did not come up): nothing was sent",
          { cause: err });
      }
      if (err instanceof NoPoolClient) {
        this.logger.warn(`${what} (token ${this.tokenValue}) got no connection from the pool in ` +
          `${Math.round(budget)} ms: nothing was sent, and the lease expires by itself at its ` +
          "deadline");
        return;
      }
      if (err instanceof NoAnswer) {
        this.logger.warn(`${what} (token ${this.tokenValue}) got no answer in ${Math.round(budget)}` +
          " ms: its connection is dropped, and the lease expires by itself at its deadline");
        return;
      }
      throw new DlockError(`${what} failed (it expires by itself at its deadline): ` +
        describe(err), { cause: err });
    }
    this.own.close();
    if (ok) {
      this.state = "released";
      this.logger.debug?.(`released lease "${this.name}" (token ${this.tokenValue})`);
      return;
    }
    this.state = "held";
    this.markLost("release refused: the lease expired or changed hands before the work ended " +
      "(it overran its lease)");
    throw this.lostError;
  }

  /**
   * dlock_release on the lease's own connection when it is open, else on
   * a client of the pool; once more on a client of the pool if the
   * connection broke (had the first committed, the second says false: a
   * LeaseLostError, never the other way round).
   */
  private async releaseOnce(ms: number, what: string): Promise<boolean> {
    const end = mono() + ms;
    const values = [this.name, this.tokenValue.toString()];
    const viaPool = (): Promise<boolean> =>
      withPoolClient(this.pool, end - mono(), what, async (client, until) => {
        const res = await run(client, RELEASE_SQL, values, until - mono(), what);
        return res.rows[0]?.ok === true;
      });
    if (!this.own.open) {
      return viaPool();
    }
    try {
      const res = await this.own.query(RELEASE_SQL, values, ms, what);
      return res.rows[0]?.ok === true;
    } catch (err) {
      if (fromServer(err) || err instanceof NoAnswer || end - mono() <= 0) {
        throw err;
      }
      this.logger.info?.(`${what} failed, retrying: ${describe(err)}`);
      return viaPool();
    }
  }
}

/** @internal */
export async function take(init: LeaseInit, wait: number, renew: boolean): Promise<Lease> {
  const lease = new Lease(init);
  await lease._acquire(wait);
  lease._start(renew);
  return lease;
}

/**
 * Acquire the lease `name` (committed when this resolves) and renew it in
 * the background.  Rejects with `BusyError` if somebody else still holds it
 * after `wait`.  Release it with `lease.release()`; `withLease()` does that
 * for you.
 */
export function acquire(pool: Pool, name: string, options: LeaseOptions): Promise<Lease> {
  try {
    checkName(name);
    const ttl = checkMs(options.ttl, "ttl", false);
    const wait = checkMs(options.wait ?? 0, "wait", true);
    const init: LeaseInit = {
      pool, name, ttl, owner: options.owner, ownerId: makeOwnerId(options.owner),
      logger: options.logger ?? defaultLogger, reacquire: false,
    };
    return take(init, wait, options.renew ?? true);
  } catch (err) {
    return Promise.reject(err);
  }
}

/**
 * Hold the lease `name` while `fn(lease)` runs, then release it; resolves
 * to what `fn` returns.  Rejects with `BusyError` (and `fn` does not run)
 * when the lease stays held by somebody else for `wait`; with
 * `LeaseLostError` when the lease was lost while `fn` ran or the release
 * found it no longer held, unless `fn` rejected, whose error then wins.
 */
export async function withLease<T>(pool: Pool, name: string, options: LeaseOptions,
  fn: (lease: Lease) => Promise<T> | T): Promise<T> {
  const lease = await acquire(pool, name, options);
  let result: T;
  try {
    result = await fn(lease);
  } catch (err) {
    await lease.release().catch((releaseErr: unknown) => {
      if (!(releaseErr instanceof LeaseLostError)) {
        (options.logger ?? defaultLogger).warn(messageOf(releaseErr));
      }
    });
    throw err;
  }
  await lease.release();
  return result;
}
