// Copyright (c) 2026, the dlock developers
// Statements with a deadline, on a pool's client or on a connection of the
// lease's own.
//
// Every statement is sent as `client.query({ text, values })`: the unnamed
// extended protocol (or a simple query when there are no values), never a
// named prepared statement, so it works behind a transaction pooler
// (PgBouncer in transaction mode) whatever the application's own queries do.

import type { Client, ClientBase, ClientConfig, Pool, PoolClient, QueryResult } from "pg";

import { DlockError } from "./errors";

/** A statement that got no answer in time; its connection was discarded. */
export class NoAnswer extends Error {
  constructor(message: string) {
    super(message);
    this.name = "NoAnswer";
  }
}

/**
 * No client of the pool came in time: nothing was sent on any connection
 * (the pool is exhausted, or a new connection did not come up).
 */
export class NoPoolClient extends NoAnswer {
  constructor(message: string) {
    super(message);
    this.name = "NoPoolClient";
  }
}

/** Milliseconds on the monotonic clock. */
export function mono(): number {
  return performance.now();
}

/**
 * Break a client's socket: whatever waits on it fails at once, and the
 * client is never usable again (a black hole cannot be waited out, and a
 * connection left in the middle of a statement cannot be reused).
 */
export function destroy(client: ClientBase): void {
  const stream = (client as unknown as { connection?: { stream?: { destroy(): void } } })
    .connection?.stream;
  try {
    stream?.destroy();
  } catch {
    // closed already
  }
}

/** True for an error the server sent (it has a severity); false for a broken connection. */
export function fromServer(err: unknown): boolean {
  return typeof err === "object" && err !== null && "severity" in err;
}

/**
 * `promise`, or NoAnswer after `ms`; then `onTimeout()` runs (it breaks
 * the connection, so the statement in flight fails and frees its client).
 */
export async function within<T>(promise: Promise<T>, ms: number, what: string,
  onTimeout: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout();
      reject(new NoAnswer(`${what}: no answer from the server in ${Math.round(ms)} ms`));
    }, Math.max(0, ms));
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** One statement on a client, bounded by `ms`; past it the client is broken. */
export function run(client: ClientBase, text: string, values: unknown[], ms: number,
  what: string): Promise<QueryResult> {
  return within(client.query({ text, values }), ms, what, () => destroy(client));
}

function ignore(): void {}

/**
 * A client of the pool for one bounded use: `use(client)` runs with a
 * listener for its "error" event; the client goes back to the pool after
 * it, or is discarded (broken, removed from the pool) when the connection
 * failed or a statement got no answer.
 */
export async function withPoolClient<T>(pool: Pool, ms: number, what: string,
  use: (client: PoolClient, deadline: number) => Promise<T>): Promise<T> {
  const deadline = mono() + ms;
  const pending = pool.connect();
  let client: PoolClient;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new NoPoolClient(`${what}: no connection from the pool ` +
      `in ${Math.round(ms)} ms (all its clients are in use, or a new connection did not come ` +
      "up): nothing was sent")), Math.max(0, ms));
  });
  try {
    client = await Promise.race([pending, late]);
  } catch (err) {
    // A client the pool hands over too late is healthy (nothing was sent
    // on it by us): it goes straight back to the pool, or to its next
    // waiter, never destroyed.
    pending.then((c) => c.release(), ignore);
    throw err;
  } finally {
    clearTimeout(timer);
  }
  client.on("error", ignore);
  let broken = false;
  try {
    return await use(client, deadline);
  } catch (err) {
    // A busy answer or a server's error leaves the connection as good as it was.
    broken = err instanceof NoAnswer || !(fromServer(err) || err instanceof DlockError);
    throw err;
  } finally {
    client.removeListener("error", ignore);
    if (broken) {
      destroy(client);
    }
    client.release(broken || undefined);
  }
}

type ClientClass = new (config?: ClientConfig) => Client;

/** How to make the lease's own connection: like the pool's, then set up as the pool's are. */
export interface ClientMaker {
  make(): Client;
  /** Run the pool's "connect" listeners on a new connection; await the promises they return. */
  setup(client: Client): Promise<void>;
}

/**
 * How to make a connection like the pool's: its Client class and options,
 * and the pool's "connect" listeners, which the application uses to set
 * up every pooled connection (`SET search_path`, `SET ROLE`): they run on
 * the lease's own connection too, with the client, and a promise they
 * return is awaited before dlock sends anything on it.
 */
export function clientFactory(pool: Pool): ClientMaker {
  const Cls = (pool as unknown as { Client?: ClientClass }).Client;
  const options = pool.options as ClientConfig;
  if (typeof Cls !== "function") {
    throw new TypeError("dlock needs a pg.Pool (its Client class makes the lease's own connection)");
  }
  return {
    make: () => new Cls(options),
    async setup(client: Client): Promise<void> {
      for (const listener of pool.listeners("connect")) {
        await (listener as (c: Client) => unknown).call(pool, client);
      }
    },
  };
}

/**
 * The lease's own connection, for renewals (and the release): never the
 * application's, never from its pool, so a busy pool or an application
 * transaction cannot hold a renewal back.  Opened on first use, reopened
 * after a failure.
 */
export class OwnConnection {
  private client: Client | null = null;
  private readonly maker: ClientMaker;

  constructor(maker: ClientMaker) {
    this.maker = maker;
  }

  get open(): boolean {
    return this.client !== null;
  }

  async query(text: string, values: unknown[], ms: number, what: string): Promise<QueryResult> {
    const end = mono() + ms;
    let client = this.client;
    if (client === null) {
      const c = this.maker.make();
      c.on("error", () => this.discard(c));
      this.client = client = c;
      try {
        await within(c.connect().then(() => this.maker.setup(c)), ms, `${what} (connecting)`,
          () => destroy(c));
      } catch (err) {
        this.discard(c);
        throw err;
      }
    }
    try {
      return await run(client, text, values, end - mono(), what);
    } catch (err) {
      if (!fromServer(err)) {
        this.discard(client);
      }
      throw err;
    }
  }

  /** Break and forget the connection (or `which`, if it is still the current one). */
  discard(which: Client | null = this.client): void {
    if (which === null) {
      return;
    }
    if (this.client === which) {
      this.client = null;
    }
    destroy(which);
    which.end().catch(ignore);
  }

  /** Close it: a clean goodbye when idle, else broken. */
  close(): void {
    const c = this.client;
    if (c === null) {
      return;
    }
    this.client = null;
    const timer = setTimeout(() => destroy(c), 1000);
    c.end().catch(ignore).finally(() => clearTimeout(timer));
  }
}
