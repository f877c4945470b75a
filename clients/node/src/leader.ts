// Copyright (c) 2026, the dlock developers
// Leader election: campaign with an owner id, hold the term by acquiring
// again with it, step down, campaign again.

import type { Pool } from "pg";

import { BusyError, LeaseLostError, messageOf } from "./errors";
import { Lease, Logger, checkMs, checkName, defaultLogger, makeOwnerId, take } from "./lease";

export interface LeaderOptions {
  /** The term's time to live, in milliseconds. */
  ttl: number;
  /** This candidate's label (a host name): required, 1 to 200 bytes. */
  owner: string;
  /** How often to campaign while somebody else leads, in milliseconds (default ttl / 3). */
  retry?: number;
  /** Aborting it stops the election: the term held is released. */
  signal?: AbortSignal;
  /** Called when this candidate is elected (a new term begins). */
  onElected?: (term: Lease) => void;
  /** Called when a term is lost (not when it is released), with the reason. */
  onLost?: (term: Lease, error: LeaseLostError) => void;
  logger?: Logger;
}

/**
 * The election as an async iterator of terms: each `next()` campaigns
 * (`dlock_acquire(name, ttl, 0, ownerId)` every `retry` ms) until elected,
 * and yields the term, a `Lease` renewed by acquiring again with the same
 * owner id (one for the whole election: a term lost here while the server
 * still holds it is won back at once).  Asking for the next term while the
 * current one is held steps down first.  `stop()`, the `signal` option, or
 * leaving a `for await` loop releases the term held and ends the election.
 */
export class Leader implements AsyncIterableIterator<Lease> {
  readonly name: string;
  readonly ownerId: string;
  private readonly pool: Pool;
  private readonly ttl: number;
  private readonly retry: number;
  private readonly options: LeaderOptions;
  private readonly logger: Logger;
  private readonly stopController = new AbortController();
  private current: Lease | null = null;
  private closed = false;

  constructor(pool: Pool, name: string, options: LeaderOptions) {
    if (typeof options.owner !== "string" || options.owner === "") {
      throw new RangeError("a leader needs an owner label of its own (e.g. the host name)");
    }
    this.pool = pool;
    this.name = checkName(name);
    this.ttl = checkMs(options.ttl, "ttl", false);
    this.retry = checkMs(options.retry ?? this.ttl / 3, "retry", false);
    this.ownerId = makeOwnerId(options.owner) as string;
    this.options = options;
    this.logger = options.logger ?? defaultLogger;
    options.signal?.addEventListener("abort", () => this.stop(), { once: true });
    if (options.signal?.aborted) {
      this.stop();
    }
  }

  /** The current (or last) term, or null. */
  get term(): Lease | null {
    return this.current;
  }

  /** Aborted when the election is stopped. */
  get stopped(): AbortSignal {
    return this.stopController.signal;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<Lease, undefined>> {
    if (this.closed || this.stopController.signal.aborted) {
      return this.return();
    }
    if (await this.endTerm() && await this.pause(this.retry)) {
      return this.return();
    }
    const term = await this.campaign();
    if (term === null) {
      return this.return();
    }
    if (this.closed || this.stopController.signal.aborted) {
      // Stopped while the winning acquire was on its way.
      await term.release().catch(() => {});
      return this.return();
    }
    this.current = term;
    term.signal.addEventListener("abort", () => {
      this.options.onLost?.(term, term.signal.reason as LeaseLostError);
    }, { once: true });
    this.options.onElected?.(term);
    return { value: term, done: false };
  }

  /** Release the term held, if any, and end the election. */
  async return(): Promise<IteratorResult<Lease, undefined>> {
    this.stop();
    if (!this.closed) {
      this.closed = true;
      await this.endTerm();
    }
    return { value: undefined, done: true };
  }

  /** Ask the election to end; the term held is released by the next step. */
  stop(): void {
    this.stopController.abort();
  }

  /** Release the current term if it is still held; true if it was. */
  private async endTerm(): Promise<boolean> {
    const term = this.current;
    this.current = null;
    if (term === null || term.lost) {
      return false;
    }
    try {
      await term.release();
      return true;
    } catch (err) {
      if (!(err instanceof LeaseLostError)) {
        this.logger.warn(`stepping down from "${this.name}" failed: ${messageOf(err)}`);
      }
      return false;
    }
  }

  private async campaign(): Promise<Lease | null> {
    for (;;) {
      try {
        return await take({
          pool: this.pool, name: this.name, ttl: this.ttl, owner: this.options.owner,
          ownerId: this.ownerId, logger: this.logger, reacquire: true,
        }, 0, true);
      } catch (err) {
        if (!(err instanceof BusyError)) {
          this.logger.info?.(`campaign for "${this.name}" failed, retrying: ${messageOf(err)}`);
        }
      }
      if (await this.pause(this.retry)) {
        return null;
      }
    }
  }

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
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", done);
    });
  }
}

/** Campaign for leadership of `name`; iterate over the terms won. */
export function leader(pool: Pool, name: string, options: LeaderOptions): Leader {
  return new Leader(pool, name, options);
}

/**
 * Run `fn(term, signal)` for every term won, until the election is stopped
 * (`options.signal`).  `signal` is aborted when the term is lost or the
 * election stopped: `fn` should return then (its return while the term is
 * still held steps down, and the campaign goes on).  A rejection of `fn`
 * after its term was lost is expected and ignored; any other ends the
 * election (the term is released) and is passed on.
 */
export async function lead(pool: Pool, name: string, options: LeaderOptions,
  fn: (term: Lease, signal: AbortSignal) => Promise<void>): Promise<void> {
  const election = new Leader(pool, name, options);
  try {
    for await (const term of election) {
      const signal = AbortSignal.any([term.signal, election.stopped]);
      try {
        await fn(term, signal);
      } catch (err) {
        if (!term.lost) {
          throw err;
        }
      }
    }
  } finally {
    await election.return();
  }
}
