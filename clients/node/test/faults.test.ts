// Copyright (c) 2026, the dlock developers
// The scenarios of docs/clients.md with a fault: C05 (the renewal's
// connection killed or black-holed), C07 (release under a black hole), C11
// (the event loop blocked past the ttl).

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { after, before, test } from "node:test";

import pg from "pg";

import { LeaseLostError, RELEASE_MAX, acquire, isStaleToken } from "../src/index";
import { Proxy, Recorder, direct, fencedTable, leaseRow, lockName, sleep, waitFor } from "./helpers";

const TABLE = "node_faults_fenced";
let admin: pg.Pool;

before(async () => {
  admin = new pg.Pool({ ...direct(), max: 2 });
  await fencedTable(admin, TABLE);
});

after(async () => {
  await admin.end();
});

/** A pool whose connections (the renewer's too) go through a fresh proxy. */
async function proxied(): Promise<{ proxy: Proxy; pool: pg.Pool }> {
  const proxy = await Proxy.start();
  const pool = new pg.Pool({ ...proxy.config(), max: 4 });
  pool.on("error", () => {});
  return { proxy, pool };
}

/** When the lease's signal is aborted (performance.now()), once it is. */
function abortTime(signal: AbortSignal): () => number {
  let at = 0;
  signal.addEventListener("abort", () => (at = performance.now()));
  return () => at;
}

test("C05 renewal connection lost: killed or black-holed, the loss is reported by the lease's expiry", { timeout: 120_000 }, async () => {
  const ttl = 1500;
  // Killed, while new connections still get through: renewed on a new one, nothing lost.
  {
    const { proxy, pool } = await proxied();
    const logger = new Recorder();
    const lease = await acquire(pool, lockName("c05-kill-reconnect"), { ttl, logger });
    try {
      await sleep(ttl / 2);
      proxy.cut();
      await sleep(ttl * 2);
      assert.equal(lease.lost, false, String(lease.lostReason));
      assert.deepEqual(await leaseRow(admin, lease.name), { held: true, token: lease.token });
      assert.ok(proxy.accepted >= 3, "the renewer connected again");
      await lease.release();
    } finally {
      await pool.end().catch(() => {});
      await proxy.close();
    }
  }
  // Killed, and no new connection gets through; then black-holed.
  for (const fault of ["killed", "black-holed"] as const) {
    const { proxy, pool } = await proxied();
    const logger = new Recorder();
    const lease = await acquire(pool, lockName(`c05-${fault}`), { ttl, logger });
    const abortedAt = abortTime(lease.signal);
    // At the moment the client says lost, how long the server still holds
    // the lease (negative: it had expired already).
    let serverLeft: Promise<number> | null = null;
    lease.signal.addEventListener("abort", () => {
      serverLeft = admin.query({
        text: `SELECT (extract(epoch FROM expires_at - clock_timestamp()) * 1000)::float8 AS ms
               FROM dlock_leases WHERE name = $1`,
        values: [lease.name],
      }).then((r) => Number(r.rows[0].ms));
    });
    try {
      await sleep(ttl / 2); // the renewer has its connection
      const faultAt = performance.now();
      if (fault === "killed") {
        proxy.refuse();
        proxy.cut();
      } else {
        proxy.freeze();
      }
      // The deadline is the last confirmed expiry, at most a ttl after
      // the fault; the server's expiry is no earlier.
      await waitFor(() => abortedAt() > 0, ttl + 1000, `the loss of a ${fault} renewal`);
      const took = abortedAt() - faultAt;
      assert.ok(took <= ttl + 250, `${fault}: reported ${Math.round(took)} ms after the fault`);
      const reason: unknown = lease.signal.reason;
      assert.ok(reason instanceof LeaseLostError);
      assert.match(reason.reason, /not renewed before its deadline/);
      // Reported at the latest at the server's expiry (give or take the
      // time the question takes to reach the server).
      assert.ok(serverLeft !== null);
      const left = await (serverLeft as Promise<number>);
      assert.ok(left > -100, `${fault}: reported ${Math.round(-left)} ms after the server's expiry`);
      const row = await leaseRow(admin, lease.name);
      assert.equal(row?.token, lease.token, "nobody took it before the client said lost");
      await assert.rejects(lease.release(), LeaseLostError);
      assert.equal(logger.warnings.length, 1, logger.warnings.join("\n"));
    } finally {
      await proxy.close();
      await pool.end().catch(() => {});
    }
  }
});

test("C07 bounded release: release under a black-holed connection returns within its bound", { timeout: 120_000 }, async () => {
  // The time left bounds it (at least 1 s), and RELEASE_MAX (5 s) caps it.
  for (const [ttl, renew, bound] of [
    [3000, true, 3000], [3000, false, 3000], [30000, true, RELEASE_MAX],
  ] as const) {
    const { proxy, pool } = await proxied();
    const logger = new Recorder();
    const lease = await acquire(pool, lockName(`c07-${ttl}-${renew}`), { ttl, renew, logger });
    try {
      await sleep(100);
      proxy.freeze();
      const t0 = performance.now();
      await lease.release(); // no LeaseLostError: the lease expires by itself
      const took = performance.now() - t0;
      assert.ok(took <= bound + 500, `ttl ${ttl}, renew ${renew}: release took ${Math.round(took)} ms`);
      assert.ok(took >= Math.min(bound, 1000) - 300, `it waited for an answer (${Math.round(took)} ms)`);
      assert.equal(logger.warnings.length, 1, logger.warnings.join("\n"));
      assert.match(logger.warnings[0] ?? "", /no answer .*expires by itself/);
      assert.equal(lease.lost, false);
      assert.equal(lease.remaining(), 0);
      // The connection it waited on is discarded, never reused: once the
      // network is back, the pool works on new connections.
      proxy.thaw();
      const r = await pool.query("SELECT 1 AS one");
      assert.equal(r.rows[0].one, 1);
    } finally {
      await proxy.close();
      await pool.end().catch(() => {});
    }
  }
});

// A competitor in another process: after a pause (argv[3] ms) it waits for
// the lease and takes it.
const COMPETITOR = `
const pg = require(${JSON.stringify(require.resolve("pg"))});
const c = new pg.Client(JSON.parse(process.argv[1]));
new Promise((r) => setTimeout(r, Number(process.argv[3])))
  .then(() => c.connect())
  .then(() => c.query("SELECT dlock_acquire($1, '30 s', '20 s') AS t", [process.argv[2]]))
  .then((r) => { process.stdout.write(String(r.rows[0].t)); return c.end(); })
  .catch((e) => { process.stderr.write(String(e)); process.exit(1); });
`;

test("C11 blocked event loop: the loss is reported when the loop next runs, and the fenced write is refused", { timeout: 120_000 }, async () => {
  const ttl = 1000;
  const pool = new pg.Pool({ ...direct(), max: 3 });
  try {
    const name = lockName("c11");
    const logger = new Recorder();
    const lease = await acquire(pool, name, { ttl, logger });
    const abortedAt = abortTime(lease.signal);
    await sleep(ttl / 2);
    // Block the event loop for longer than the ttl: spawnSync waits for a
    // competitor that takes the lease once it expired on the server.
    const t0 = performance.now();
    const child = spawnSync(process.execPath, ["-e", COMPETITOR, JSON.stringify(direct()), name,
      String(ttl + 200)],
      { encoding: "utf8", timeout: 30000 });
    const unblocked = performance.now();
    assert.equal(child.status, 0, child.stderr);
    const theirs = BigInt(child.stdout);
    assert.ok(theirs > lease.token);
    assert.ok(unblocked - t0 > ttl, `the loop was blocked for ${Math.round(unblocked - t0)} ms`);
    assert.equal(abortedAt(), 0, "nothing ran while the loop was blocked");

    // The loop runs again: the loss is reported at once.
    await waitFor(() => abortedAt() > 0, 1000, "the loss after the blocked loop");
    assert.ok(abortedAt() - unblocked < 200,
      `reported ${Math.round(abortedAt() - unblocked)} ms after the loop ran again`);
    const reason: unknown = lease.signal.reason;
    assert.ok(reason instanceof LeaseLostError);
    assert.match(reason.reason, /did not run in time: the event loop was blocked/);

    // The fenced write is refused: by the client (nothing is sent), and by
    // the server for a write that carries the old token anyway.
    const c = await pool.connect();
    try {
      await c.query("BEGIN");
      await assert.rejects(lease.fence(c), LeaseLostError);
      const err = await c.query({
        text: `INSERT INTO ${TABLE} (name, token, body) VALUES ($1, $2, 'late')`,
        values: [name, lease.token.toString()],
      }).then(() => null, (e: unknown) => e);
      assert.ok(isStaleToken(err), `the server refused it with LK001, got ${String(err)}`);
      await c.query("ROLLBACK");
    } finally {
      c.release();
    }
    await assert.rejects(lease.release(), LeaseLostError);
    assert.deepEqual(await leaseRow(admin, name), { held: true, token: theirs });

    // Read right after a block, without yielding, the lease is already lost.
    const second = await acquire(pool, lockName("c11-sync"), { ttl, logger });
    const end = performance.now() + ttl * 1.5;
    while (performance.now() < end) {
      // busy: the event loop does not run
    }
    assert.equal(second.signal.aborted, true);
    assert.equal(second.lost, true);
    await assert.rejects(second.release(), LeaseLostError);
  } finally {
    await pool.end();
  }
});
