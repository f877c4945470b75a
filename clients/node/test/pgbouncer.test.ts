// Copyright (c) 2026, the dlock developers
// C09: the client behind PgBouncer in transaction mode.  A PgBouncer of the
// test's own (2 server connections) in front of the server, and the proxy
// in front of PgBouncer reading every Parse message the clients send.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import pg from "pg";

import { BusyError, acquire, withLease } from "../src/index";
import { Bouncer, Proxy, Recorder, direct, fencedTable, leaseRow, lockName, sleep } from "./helpers";

const TABLE = "node_pgbouncer_fenced";
let admin: pg.Pool;

before(async () => {
  admin = new pg.Pool({ ...direct(), max: 2 });
  await fencedTable(admin, TABLE);
});

after(async () => {
  await admin.end();
});

test("C09 PgBouncer transaction mode: only unnamed or simple statements; the lease works through pgbouncer", { timeout: 120_000 }, async () => {
  const bouncer = await Bouncer.start(2);
  const proxy = await Proxy.start(bouncer.address);
  const pool = new pg.Pool({ ...proxy.config(), max: 6 });
  pool.on("error", () => {});
  try {
    const logger = new Recorder();
    // The application's own pool may prepare named statements: that is its
    // business (PgBouncer 1.18 does not follow them); the client's own
    // statements on the same pool never are.
    await pool.query({ name: "app_statement", text: "SELECT 1 AS one" });

    // Four leases at once over two server connections, each renewed across
    // several ttls and fencing a write.
    const ttl = 1200;
    const names = [0, 1, 2, 3].map((i) => lockName(`c09-${i}`));
    const tokens = await Promise.all(names.map((name) =>
      withLease(pool, name, { ttl, owner: "pgbouncer-test", logger }, async (lease) => {
        await assert.rejects(acquire(pool, name, { ttl, logger }), BusyError);
        await sleep(ttl * 2.5);
        const c = await pool.connect();
        try {
          await c.query("BEGIN");
          await lease.fence(c);
          await c.query({
            text: `INSERT INTO ${TABLE} (name, token, body) VALUES ($1, $2, 'through pgbouncer')`,
            values: [name, lease.token.toString()],
          });
          await c.query("COMMIT");
        } finally {
          c.release();
        }
        assert.equal(lease.lost, false);
        return lease.token;
      })));
    for (const [i, name] of names.entries()) {
      assert.deepEqual(await leaseRow(admin, name), { held: false, token: tokens[i] });
      const r = await admin.query({ text: `SELECT token FROM ${TABLE} WHERE name = $1`, values: [name] });
      assert.equal(BigInt(r.rows[0].token), tokens[i]);
    }
    // A waiting acquire through the pooler, too.
    const holder = await acquire(pool, names[0] as string, { ttl, logger });
    const waiter = acquire(pool, names[0] as string, { ttl, wait: 5000, logger });
    await sleep(200);
    await holder.release();
    await (await waiter).release();

    assert.deepEqual(logger.warnings, []);
    assert.ok(proxy.parseNames.includes("app_statement"), "the proxy sees statement names");
    const named = proxy.parseNames.filter((n) => n !== "" && n !== "app_statement");
    assert.deepEqual(named, [], "the client sent named statements");
    assert.ok(proxy.parseNames.filter((n) => n === "").length > 20,
      `${proxy.parseNames.length} Parse messages seen`);
  } finally {
    await pool.end().catch(() => {});
    await proxy.close();
    await bouncer.stop();
  }
});
