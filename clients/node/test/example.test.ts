// Copyright (c) 2026, the dlock developers
// C13: the HTTP example (examples/http_app.ts), run as its own process.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import path from "node:path";
import { once } from "node:events";
import { test } from "node:test";

import pg from "pg";

import { DB, HOST, PORT, USER, direct } from "./helpers";

const APP = path.join(__dirname, "..", "examples", "http_app.js");

test("C13 the HTTP example: an endpoint that runs a job at most once at a time, 200 then 409", { timeout: 120_000 }, async () => {
  const child = spawn(process.execPath, [APP], {
    env: { ...process.env, PGHOST: HOST, PGPORT: String(PORT), PGUSER: USER, PGDATABASE: DB,
      PORT: "0", DLOCK_EXAMPLE_JOB_MS: "1500" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stderr.on("data", (b: Buffer) => (output += b.toString()));
  const admin = new pg.Pool({ ...direct(), max: 1 });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on("data", (b: Buffer) => {
        output += b.toString();
        const m = /listening on (\S+)/.exec(output);
        if (m) {
          resolve(m[1] as string);
        }
      });
      child.once("exit", (code) => reject(new Error(`the example exited (${code}): ${output}`)));
    });
    const post = async (): Promise<{ status: number; body: { token?: string; error?: string } }> => {
      const r = await fetch(url, { method: "POST" });
      return { status: r.status, body: await r.json() as { token?: string; error?: string } };
    };
    const first = post();
    await new Promise((r) => setTimeout(r, 400));
    const second = await post();
    assert.equal(second.status, 409, JSON.stringify(second.body));
    assert.match(second.body.error ?? "", /already running/);
    const one = await first;
    assert.equal(one.status, 200, JSON.stringify(one.body));
    const written = await admin.query("SELECT token, body FROM report WHERE job = 'nightly-report'");
    assert.equal(written.rows[0].token, one.body.token, "the fenced write carries the run's token");
    // Once it is done, it runs again, with a newer token.
    const again = await post();
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.ok(BigInt(again.body.token ?? "0") > BigInt(one.body.token ?? "0"));
    const r = await fetch(url);
    assert.equal(r.status, 405);
    await r.body?.cancel();
  } finally {
    await admin.end();
    if (child.exitCode === null) {
      child.kill("SIGTERM");
      await once(child, "exit");
    }
  }
  assert.equal(child.exitCode, 0, output);
});
