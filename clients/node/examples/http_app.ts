// Copyright (c) 2026, the dlock developers
// An HTTP endpoint that runs a job at most once at a time, across every
// replica that shares the database: POST /jobs/nightly-report.
//
//   200 {"token": "...", "body": "..."}  the report ran here and was written
//   409 {"error": ...}                    it is already running somewhere
//   503 {"error": ...}                    the lease was lost before the write
//                                         (nothing written), or the database
//                                         is out of reach
//
// The report is written in a transaction fenced with the lease's token: on
// a table with a dlock_fence() trigger, a replica that stalled past its
// lease has its write refused by the database (LK001).  The answer is
// decided by the write: once the fenced transaction committed, it is 200,
// even if the lease is found lost afterwards.
//
// Plain node:http and node-postgres.  Run it (from clients/node, after
// `npm ci && npm run build`) with the PG* variables of libpq naming a
// database where dlock is installed:
//
//   PGDATABASE=app PORT=8080 node dist/examples/http_app.js
//   curl -X POST http://127.0.0.1:8080/jobs/nightly-report
//
// DLOCK_EXAMPLE_JOB_MS sets how long the "report" takes (default 2000).

import http from "node:http";
import os from "node:os";
import { setTimeout as sleep } from "node:timers/promises";

import pg from "pg";

import { BusyError, LeaseLostError, StaleTokenError, isStaleToken, withLease } from "dlock";

const JOB = "nightly-report";

export const SETUP_SQL = `
SELECT pg_advisory_xact_lock(hashtext('dlock clients/node/examples/http_app.ts setup'));
CREATE TABLE IF NOT EXISTS report (
    job        text        PRIMARY KEY,
    token      bigint      NOT NULL,
    body       text        NOT NULL,
    written_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE OR REPLACE TRIGGER report_fence BEFORE INSERT OR UPDATE OR DELETE ON report
    FOR EACH ROW EXECUTE FUNCTION dlock_fence('job', 'token', 'column');
`;

const WRITE_SQL = `
INSERT INTO report (job, token, body) VALUES ($1, $2, $3)
ON CONFLICT (job) DO UPDATE SET token = excluded.token, body = excluded.body,
                                written_at = clock_timestamp()`;

/** The job itself: stops as soon as the lease is lost. */
async function buildReport(signal: AbortSignal, ms: number): Promise<string> {
  await sleep(ms, undefined, { signal });
  return `report built by ${os.hostname()} (pid ${process.pid}) at ${new Date().toISOString()}`;
}

function send(res: http.ServerResponse, status: number, body: object): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

async function runJob(pool: pg.Pool, jobMs: number, res: http.ServerResponse): Promise<void> {
  let written: { token: string; body: string } | null = null;
  try {
    await withLease(pool, JOB, { ttl: 30_000, owner: os.hostname() }, async (lease) => {
      const body = await buildReport(lease.signal, jobMs);
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        await lease.fence(client); // the write below carries the lease's token
        await client.query({ text: WRITE_SQL, values: [JOB, lease.token.toString(), body] });
        await client.query("COMMIT");
        written = { token: lease.token.toString(), body };
      } catch (err) {
        await client.query("ROLLBACK").catch(() => {});
        throw err;
      } finally {
        client.release();
      }
    });
  } catch (err) {
    if (written !== null) {
      // Committed under the lease: done, even if the lease was lost after.
      send(res, 200, written);
    } else if (err instanceof BusyError) {
      send(res, 409, { error: `${JOB} is already running` });
    } else if (err instanceof LeaseLostError || err instanceof StaleTokenError ||
      isStaleToken(err) || (err instanceof Error && err.name === "AbortError")) {
      send(res, 503, { error: `the lease was lost: ${JOB} was not written` });
    } else {
      send(res, 503, { error: `the database is out of reach: ${(err as Error).message}` });
    }
    return;
  }
  send(res, 200, written ?? {});
}

/** The server: POST /jobs/nightly-report, nothing else. */
export function createServer(pool: pg.Pool, jobMs = 2000): http.Server {
  return http.createServer((req, res) => {
    if (req.url !== `/jobs/${JOB}`) {
      send(res, 404, { error: "not found" });
    } else if (req.method !== "POST") {
      res.setHeader("allow", "POST");
      send(res, 405, { error: "use POST" });
    } else {
      runJob(pool, jobMs, res).catch((err: unknown) => send(res, 500, { error: String(err) }));
    }
  });
}

async function main(): Promise<void> {
  const pool = new pg.Pool({ max: 10 });
  pool.on("error", () => {}); // an idle client's broken connection: the pool drops it
  await pool.query(SETUP_SQL);
  const server = createServer(pool, Number(process.env.DLOCK_EXAMPLE_JOB_MS ?? 2000));
  server.listen(Number(process.env.PORT ?? 8080), "127.0.0.1", () => {
    const { port } = server.address() as { port: number };
    console.log(`listening on http://127.0.0.1:${port}/jobs/${JOB}`);
  });
  process.once("SIGTERM", () => {
    server.close(() => void pool.end());
  });
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
