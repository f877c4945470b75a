// Copyright (c) 2026, the dlock developers
// C10: leader election, with a stalled leader replaced.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import pg from "pg";

import { Leader, Lease, LeaseLostError, lead, leader } from "../src/index";
import { Proxy, Recorder, direct, leaseRow, lockName, sleep, waitFor } from "./helpers";

let admin: pg.Pool;

before(() => {
  admin = new pg.Pool({ ...direct(), max: 2 });
});

after(async () => {
  await admin.end();
});

test("C10 leader election: a stalled leader is replaced and reports the loss; callbacks run", { timeout: 120_000 }, async () => {
  const name = lockName("c10");
  const ttl = 1500;
  const events: Array<[string, string, number]> = [];
  const note = (who: string, what: string): void => {
    events.push([who, what, performance.now()]);
  };
  const proxyA = await Proxy.start();
  const proxyB = await Proxy.start();
  const poolA = new pg.Pool({ ...proxyA.config(), max: 3 });
  const poolB = new pg.Pool({ ...proxyB.config(), max: 3 });
  poolA.on("error", () => {});
  poolB.on("error", () => {});
  const logger = new Recorder();
  let a: Leader | undefined;
  let aLoop: Promise<void> = Promise.resolve();
  let bLoop: Promise<void> = Promise.resolve();
  const stopB = new AbortController();
  try {
    // A: the async iterator of terms.
    a = leader(poolA, name, {
      ttl, owner: "node-a", retry: 200, logger,
      onElected: () => note("a", "elected"),
      onLost: (_term, err) => note("a", err instanceof LeaseLostError ? "lost" : "lost?"),
    });
    const aTerms: Lease[] = [];
    aLoop = (async () => {
      for await (const term of a) {
        aTerms.push(term);
        const signal = AbortSignal.any([term.signal, (a as Leader).stopped]);
        await new Promise((resolve) => signal.addEventListener("abort", resolve));
      }
    })();
    await waitFor(() => aTerms.length === 1, 5000, "a to be elected");

    // B: lead() with callbacks, started while A leads.
    const bTerms: Lease[] = [];
    bLoop = lead(poolB, name, {
      ttl, owner: "node-b", retry: 200, logger, signal: stopB.signal,
      onElected: () => note("b", "elected"),
      onLost: () => note("b", "lost"),
    }, async (term, signal) => {
      bTerms.push(term);
      await new Promise((resolve) => signal.addEventListener("abort", resolve));
    });

    await sleep(ttl * 2);
    assert.equal(bTerms.length, 0, "b is not elected while a renews");
    const aTerm = aTerms[0] as Lease;
    assert.deepEqual(await leaseRow(admin, name), { held: true, token: aTerm.token });
    assert.match(aTerm.ownerId ?? "", /^node-a:/);

    // A stalls: every connection of its black-holed.
    proxyA.freeze();
    await waitFor(() => bTerms.length === 1, ttl * 3, "b to replace the stalled a");
    const bTerm = bTerms[0] as Lease;
    assert.ok(bTerm.token > aTerm.token);
    assert.deepEqual(await leaseRow(admin, name), { held: true, token: bTerm.token });
    assert.equal(aTerm.lost, true);
    const aLost = events.find(([who, what]) => who === "a" && what === "lost");
    const bElected = events.find(([who, what]) => who === "b" && what === "elected");
    assert.ok(aLost && bElected, JSON.stringify(events));
    assert.ok(aLost[2] <= bElected[2], "a reported the loss before b was elected");

    // B keeps leading; stopping it releases its term.
    await sleep(ttl * 1.5);
    assert.equal(bTerm.lost, false);
    stopB.abort();
    await bLoop;
    assert.equal((await leaseRow(admin, name))?.held, false);
    assert.ok(!events.some(([who, what]) => who === "b" && what === "lost"),
      "a released term is not lost");

    // A, back on the network, wins the next term.
    proxyA.cut();
    proxyA.thaw();
    await waitFor(() => aTerms.length === 2, ttl * 4, "a to be elected again");
    assert.equal(events.filter(([who, what]) => who === "a" && what === "elected").length, 2);
    a.stop();
    await aLoop;
    assert.equal((await leaseRow(admin, name))?.held, false);

  } finally {
    a?.stop();
    stopB.abort();
    proxyA.thaw();
    proxyA.cut();
    await Promise.allSettled([aLoop, bLoop]);
    await poolA.end().catch(() => {});
    await poolB.end().catch(() => {});
    await proxyA.close();
    await proxyB.close();
  }
});
