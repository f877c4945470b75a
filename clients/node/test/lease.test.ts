// Copyright (c) 2026, the dlock developers
// The scenarios of docs/clients.md that need no fault: C01-C04, C06, C08, C12.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import pg from "pg";

import { BusyError, DlockError, LeaseLostError, NoConnectionError, NotInstalledError,
  StaleTokenError, acquire, isStaleToken, leader, staleTokenError, withLease } from "../src/index";
import { DB, Recorder, direct, fencedTable, grab, leaseRow, lockName, noLeaks, sleep,
  waitFor } from "./helpers";

const TABLE = "node_lease_fenced";
let pool: pg.Pool;
let admin: pg.Pool;

before(async () => {
  pool = new pg.Pool({ ...direct(), max: 6 });
  admin = new pg.Pool({ ...direct(), max: 2 });
  await fencedTable(admin, TABLE);
});

after(async () => {
  await pool.end();
  await admin.end();
});

test("C01 acquire and busy: a second acquirer of a held name gets BusyError", { timeout: 120_000 }, async () => {
  const name = lockName("c01");
  const logger = new Recorder();
  const first = await acquire(pool, name, { ttl: 10000, owner: "web-1", logger });
  assert.ok(first.token > 0n);
  assert.match(first.ownerId ?? "", new RegExp(`^web-1:${process.pid}:[0-9a-f]{12}$`));
  assert.deepEqual(await leaseRow(admin, name), { held: true, token: first.token });

  let removed = 0;
  pool.on("remove", () => (removed += 1));
  // The same label in another lease is somebody else: busy, never the same token.
  await assert.rejects(acquire(pool, name, { ttl: 10000, owner: "web-1", logger }),
    (err: unknown) => err instanceof BusyError && err.lockName === name &&
      err instanceof DlockError);
  let ran = false;
  await assert.rejects(withLease(pool, name, { ttl: 10000 }, async () => {
    ran = true;
  }), BusyError);
  assert.equal(ran, false, "the work of a busy withLease does not run");
  assert.equal(removed, 0, "a busy answer leaves the pool's connection in the pool");

  await first.release();
  assert.equal((await leaseRow(admin, name))?.held, false);
  assert.deepEqual(logger.warnings, []);
});

test("C02 wait: a waiting acquire gets the lease soon after the holder releases", { timeout: 120_000 }, async () => {
  const name = lockName("c02");
  const holder = await acquire(pool, name, { ttl: 10000 });
  const t0 = performance.now();
  const waiting = acquire(pool, name, { ttl: 3000, wait: 10000 });
  await sleep(1000);
  const released = performance.now();
  await holder.release();
  const next = await waiting;
  const got = performance.now();
  try {
    assert.ok(got - released < 2000, `got the lease ${Math.round(got - released)} ms after the release`);
    assert.ok(got - t0 >= 900, "it waited for the release");
    assert.ok(next.token > holder.token);
    // The time left is counted from when the lease was granted, not from
    // when the acquire was sent (a second before).
    assert.ok(next.remaining() > 2500, `remaining ${Math.round(next.remaining())} ms of 3000`);
  } finally {
    await next.release();
  }
  // A wait that runs out is busy.
  const again = await acquire(pool, name, { ttl: 10000 });
  const w0 = performance.now();
  await assert.rejects(acquire(pool, name, { ttl: 1000, wait: 300 }), BusyError);
  assert.ok(performance.now() - w0 >= 250);
  await again.release();
});

test("C03 renewal: a lease held across several ttls keeps one token and is held throughout", { timeout: 120_000 }, async () => {
  const name = lockName("c03");
  const logger = new Recorder();
  await withLease(pool, name, { ttl: 900, logger }, async (lease) => {
    const end = performance.now() + 3500;
    let samples = 0;
    while (performance.now() < end) {
      assert.deepEqual(await leaseRow(admin, name), { held: true, token: lease.token });
      assert.equal(lease.signal.aborted, false);
      assert.ok(lease.remaining() > 0);
      samples += 1;
      await sleep(50);
    }
    assert.ok(samples > 20);
  });
  assert.equal((await leaseRow(admin, name))?.held, false);
  assert.deepEqual(logger.warnings, []);
});

test("C04 overrun: work that outlives its lease is reported lost, and release says so", { timeout: 120_000 }, async () => {
  const name = lockName("c04");
  const logger = new Recorder();
  const lease = await acquire(pool, name, { ttl: 800, renew: false, logger });
  const t0 = performance.now();
  let abortedAt = 0;
  lease.signal.addEventListener("abort", () => (abortedAt = performance.now()));
  await sleep(1500);
  assert.ok(abortedAt > 0, "the signal was aborted");
  assert.ok(abortedAt - t0 <= 800 + 300, `aborted ${Math.round(abortedAt - t0)} ms after the acquire`);
  const reason: unknown = lease.signal.reason;
  assert.ok(reason instanceof LeaseLostError);
  assert.match(reason.reason, /deadline/);
  assert.equal(lease.lost, true);
  await assert.rejects(lease.release(), LeaseLostError);
  await assert.rejects(lease.release(), LeaseLostError, "a second release says the same");
  assert.equal(logger.warnings.length, 1);

  // withLease: work that overruns ends with LeaseLostError, not its result.
  await assert.rejects(withLease(pool, name, { ttl: 600, renew: false, logger }, async (l) => {
    await sleep(1000);
    return l.token;
  }), LeaseLostError);
  // An error of the work's own wins over the loss.
  await assert.rejects(withLease(pool, name, { ttl: 600, renew: false, logger }, async () => {
    await sleep(1000);
    throw new Error("the work's own error");
  }), /the work's own error/);
});

test("C06 stale fence: a fenced write with a stale token raises StaleTokenError (LK001)", { timeout: 120_000 }, async () => {
  const name = lockName("c06");
  const lease = await acquire(pool, name, { ttl: 30000, logger: new Recorder() });
  // Behind the client's back: released and taken by somebody else.
  const r = await admin.query({ text: "SELECT dlock_release($1, $2) AS ok",
    values: [name, lease.token.toString()] });
  assert.equal(r.rows[0].ok, true);
  const other = await grab(admin, name);
  assert.ok(other !== null && other > lease.token);

  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await assert.rejects(lease.fence(client), (err: unknown) =>
      err instanceof StaleTokenError && err.lockName === name && err.token === lease.token &&
      err.sqlstate === "LK001" && isStaleToken(err.cause));
    await client.query("ROLLBACK");
    assert.equal(lease.lost, true);
    assert.ok(lease.signal.reason instanceof LeaseLostError);

    // A write that carries the stale token itself, without fence(): the
    // trigger refuses it, and staleTokenError() gives the typed error.
    await client.query("BEGIN");
    const write = client.query({
      text: `INSERT INTO ${TABLE} (name, token, body) VALUES ($1, $2, 'stale')`,
      values: [name, lease.token.toString()],
    });
    const err = await write.then(() => null, (e: unknown) => e);
    assert.ok(isStaleToken(err), `LK001, got ${String(err)}`);
    assert.ok(staleTokenError(err, name, lease.token) instanceof StaleTokenError);
    await client.query("ROLLBACK");
    // fence() outside a transaction would declare nothing: refused.
    const fresh = await acquire(pool, lockName("c06b"), { ttl: 5000 });
    await assert.rejects(fresh.fence(client), /needs a transaction/);
    await fresh.release();
  } finally {
    client.release();
  }
  await assert.rejects(lease.release(), LeaseLostError);
});

test("C08 concurrency: promises using one lease at once are safe, one release wins", { timeout: 120_000 }, async () => {
  const name = lockName("c08");
  await noLeaks(async () => {
    // Fences and writes from several clients at once, then two releases and a fence.
    const lease = await acquire(pool, name, { ttl: 5000 });
    const write = async (i: number): Promise<void> => {
      const c = await pool.connect();
      try {
        await c.query("BEGIN");
        await lease.fence(c);
        await c.query({
          text: `INSERT INTO ${TABLE} (name, token, body) VALUES ($1, $2, $3)
                 ON CONFLICT (name) DO UPDATE SET token = excluded.token, body = excluded.body`,
          values: [name, lease.token.toString(), `w${i}`],
        });
        await c.query("COMMIT");
      } catch (err) {
        await c.query("ROLLBACK");
        throw err;
      } finally {
        c.release();
      }
    };
    await Promise.all([0, 1, 2, 3].map(write));

    // A fence already sent, then two releases at once: the release waits
    // for the fenced transaction, and both releases answer the same.
    const c = await pool.connect();
    await c.query("BEGIN");
    const fenced = lease.fence(c).then(() => c.query("COMMIT"));
    const [r1, r2] = await Promise.allSettled([lease.release(), lease.release(), fenced]);
    assert.equal(r1.status, "fulfilled");
    assert.equal(r2.status, "fulfilled");
    c.release();
    assert.equal((await leaseRow(admin, name))?.held, false);

    // A release first, then a fence: the fence is refused, nothing sent.
    const second = await acquire(pool, name, { ttl: 5000 });
    const c2 = await pool.connect();
    await c2.query("BEGIN");
    const results = await Promise.allSettled([second.release(), second.fence(c2), second.release()]);
    assert.equal(results[0].status, "fulfilled");
    assert.equal(results[2].status, "fulfilled");
    assert.equal(results[1].status, "rejected");
    assert.ok(results[1].status === "rejected" && results[1].reason instanceof DlockError &&
      /was released/.test((results[1].reason as Error).message));
    await c2.query("ROLLBACK");
    c2.release();

    // Two releases at once of a lease the server no longer holds: both
    // hear it (the second waits for the first, then answers the same).
    const third = await acquire(pool, name, { ttl: 5000, logger: new Recorder() });
    await admin.query({ text: "SELECT dlock_release($1, $2)", values: [name, third.token.toString()] });
    const both = await Promise.allSettled([third.release(), third.release()]);
    assert.deepEqual(both.map((r) => r.status), ["rejected", "rejected"]);
    assert.ok(both.every((r) => r.status === "rejected" && r.reason instanceof LeaseLostError));

    // Ten promises competing for one name: one holder at a time.
    let inside = 0;
    let most = 0;
    let runs = 0;
    await Promise.all(Array.from({ length: 10 }, async () => {
      const end = performance.now() + 1500;
      while (performance.now() < end) {
        try {
          await withLease(pool, name, { ttl: 2000 }, async () => {
            inside += 1;
            most = Math.max(most, inside);
            runs += 1;
            await sleep(20);
            inside -= 1;
          });
        } catch (err) {
          if (!(err instanceof BusyError)) {
            throw err;
          }
          await sleep(5);
        }
      }
    }));
    assert.equal(most, 1);
    assert.ok(runs > 3, `${runs} runs`);
  });
});

test("C12 not installed: a database without dlock gives an error that says what to do", { timeout: 120_000 }, async () => {
  const bare = `${DB}_bare`;
  await admin.query(`DROP DATABASE IF EXISTS ${bare}`);
  await admin.query(`CREATE DATABASE ${bare}`);
  const other = new pg.Pool({ ...direct(bare), max: 2 });
  try {
    await assert.rejects(acquire(other, "c12", { ttl: 1000 }), (err: unknown) =>
      err instanceof NotInstalledError && err instanceof DlockError &&
      /CREATE EXTENSION dlock/.test(err.message) && /search_path/.test(err.message) &&
      (err.cause as { code?: string }).code === "42883");
    let ran = false;
    await assert.rejects(withLease(other, "c12", { ttl: 1000 }, () => {
      ran = true;
    }), NotInstalledError);
    assert.equal(ran, false);
  } finally {
    await other.end();
    await waitFor(async () => {
      try {
        await admin.query(`DROP DATABASE IF EXISTS ${bare}`);
        return true;
      } catch {
        return false;
      }
    }, 10000, `DROP DATABASE ${bare}`);
  }
});

test("C01 lone surrogates: a name or owner that is not well-formed UTF-16 is refused before anything is sent", { timeout: 120_000 }, async () => {
  // "\uD800" and "\uDFFF" would both reach the server as U+FFFD: one lock.
  const base = lockName("c01-surrogate");
  for (const bad of [`${base}\uD800`, `${base}\uDFFF`, `\uDC00${base}`]) {
    await assert.rejects(acquire(pool, bad, { ttl: 1000 }), (err: unknown) =>
      err instanceof TypeError && /UTF-16/.test((err as Error).message));
    await assert.rejects(withLease(pool, bad, { ttl: 1000 }, () => {}), TypeError);
    assert.throws(() => leader(pool, bad, { ttl: 1000, owner: "web-1" }), TypeError);
    assert.equal(await leaseRow(admin, `${base}\uFFFD`), null, "nothing reached the server");
  }
  await assert.rejects(acquire(pool, base, { ttl: 1000, owner: "web\uD800" }), TypeError);
  // A paired surrogate is a well-formed character, and works.
  const emoji = `${base}:\u{1F512}`;
  const lease = await acquire(pool, emoji, { ttl: 10000 });
  assert.deepEqual(await leaseRow(admin, emoji), { held: true, token: lease.token });
  await lease.release();
});

test("C01 exhausted pool: an acquire that gets no pooled client says so, sends nothing, and leaves the pool's clients alone", { timeout: 120_000 }, async () => {
  const small = new pg.Pool({ ...direct(), max: 2 });
  let removed = 0;
  small.on("remove", () => (removed += 1));
  const name = lockName("c01-exhausted");
  const a = await small.connect();
  const b = await small.connect();
  const pidA = (await a.query("SELECT pg_backend_pid() AS p")).rows[0].p as number;
  try {
    const t0 = performance.now();
    await assert.rejects(acquire(small, name, { ttl: 10000 }), (err: unknown) =>
      err instanceof NoConnectionError && err instanceof DlockError &&
      /no connection from the pool/.test(err.message) && /nothing was sent/.test(err.message));
    const took = performance.now() - t0;
    assert.ok(took >= 4500 && took < 8000, `gave up after ${Math.round(took)} ms`);
    assert.equal(await leaseRow(admin, name), null, "the acquire was never sent");
  } finally {
    a.release();
    b.release();
  }
  await sleep(200);
  // The client the pool handed to the given-up acquire went back to the pool, unharmed.
  assert.equal(removed, 0, "no pooled client was destroyed");
  assert.equal(small.totalCount, 2);
  const c = await small.connect();
  const d = await small.connect();
  try {
    const pids = [(await c.query("SELECT pg_backend_pid() AS p")).rows[0].p,
      (await d.query("SELECT pg_backend_pid() AS p")).rows[0].p];
    assert.ok(pids.includes(pidA), "the app's first connection is still in the pool");
  } finally {
    c.release();
    d.release();
  }
  const lease = await acquire(small, name, { ttl: 10000 });
  await lease.release();
  await small.end();
});

/** dlock's schema, where the functions are (the C edition's or the SQL edition's). */
async function dlockSchema(): Promise<string> {
  const res = await admin.query(`SELECT n.nspname AS s FROM pg_catalog.pg_proc p
    JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace WHERE p.proname = 'dlock_renew'`);
  return (res.rows[0] as { s: string }).s;
}

test("C12 found through a connect hook: a pool whose 'connect' listener sets search_path renews on its own connection too", { timeout: 120_000 }, async () => {
  const schema = await dlockSchema();
  // The connection settings leave dlock's schema off search_path; only the
  // application's hook puts it there.
  const hooked = new pg.Pool({ ...direct(), max: 2, options: "-c search_path=dlock_nowhere" });
  let path = schema;
  hooked.on("connect", (c: pg.PoolClient) => {
    c.query(`SET search_path TO "${path}"`).catch(() => {});
  });
  // A listener that returns a promise is awaited before the renewal is sent.
  hooked.on("connect", async (c: pg.PoolClient) => {
    await sleep(50);
    await c.query("SET application_name TO 'dlock-hooked'");
  });
  const logger = new Recorder();
  const name = lockName("c12-hook");
  try {
    const lease = await acquire(hooked, name, { ttl: 600, logger });
    const token = lease.token;
    const end = performance.now() + 2500;
    while (performance.now() < end) {
      assert.equal(lease.lost, false, `lost: ${lease.lostReason}`);
      assert.deepEqual(await leaseRow(admin, name), { held: true, token });
      await sleep(100);
    }
    const apps = await admin.query(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'dlock-hooked'");
    assert.ok((apps.rows[0] as { n: number }).n >= 2, "the own connection ran the async hook");
    await lease.release();
    assert.equal((await leaseRow(admin, name))?.held, false);
    assert.deepEqual(logger.warnings, []);

    // A renewal connection that cannot find dlock is reported at once, as
    // not installed, not only as a loss at the deadline.
    path = "dlock_nowhere";
    const second = await acquire(hooked, name, { ttl: 6000, logger, owner: "x" });
    const t0 = performance.now();
    await waitFor(() => second.lost, 10000, "the loss");
    assert.ok(performance.now() - t0 < 4000, "reported at the first renewal, before the deadline");
    const lost = second.signal.reason as LeaseLostError;
    assert.ok(lost instanceof LeaseLostError);
    assert.ok(lost.cause instanceof NotInstalledError, `cause: ${String(lost.cause)}`);
    assert.match(lost.message, /search_path/);
    await assert.rejects(second.release(), LeaseLostError);
  } finally {
    await hooked.end();
  }
});
