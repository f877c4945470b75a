// Copyright (c) 2026, the dlock developers
// What the tests share: the database (a real one, never a mock), a TCP
// proxy that can cut, refuse or black-hole connections and sees the
// protocol's Parse messages, PgBouncer, and small waiting helpers.
//
// Environment: PGHOST (a socket directory or a host), PGPORT, PGUSER, and
// DLOCK_TEST_DB, a scratch database where dlock is installed
// (test/run's "node" suite creates one).

import { spawn, ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

import pg from "pg";

import type { Logger } from "../src/index";

export const HOST = process.env.PGHOST ?? "/var/run/postgresql";
export const PORT = Number(process.env.PGPORT ?? 5432);
export const USER = process.env.PGUSER ?? os.userInfo().username;
export const DB = process.env.DLOCK_TEST_DB ?? "";
if (DB === "") {
  throw new Error("DLOCK_TEST_DB must name a scratch database with dlock installed");
}

/** Connection settings for the database, straight to the server. */
export function direct(database = DB): pg.PoolConfig {
  return { host: HOST, port: PORT, user: USER, database };
}

/** Where the server listens, for a proxy. */
function serverAddress(): net.NetConnectOpts {
  return HOST.startsWith("/") ? { path: path.join(HOST, `.s.PGSQL.${PORT}`) }
    : { host: HOST, port: PORT };
}

/** A lock name of the test's own. */
let counter = 0;
export function lockName(what: string): string {
  counter += 1;
  return `node:${what}:${process.pid}:${counter}`;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Poll `predicate` until true; throw after `timeout` ms. */
export async function waitFor(predicate: () => boolean | Promise<boolean>, timeout: number,
  what: string): Promise<void> {
  const end = performance.now() + timeout;
  while (!(await predicate())) {
    if (performance.now() > end) {
      throw new Error(`timed out after ${timeout} ms waiting for ${what}`);
    }
    await sleep(10);
  }
}

/** A logger that keeps what it is told. */
export class Recorder implements Logger {
  readonly warnings: string[] = [];
  readonly infos: string[] = [];

  warn(message: string): void {
    this.warnings.push(message);
  }

  info(message: string): void {
    this.infos.push(message);
  }
}

/** The lease row as the server sees it: held and token, or null. */
export async function leaseRow(admin: pg.Pool, name: string):
  Promise<{ held: boolean; token: bigint } | null> {
  const res = await admin.query({
    text: "SELECT held, token FROM dlock_leases WHERE name = $1", values: [name],
  });
  const row = res.rows[0] as { held: boolean; token: string } | undefined;
  return row === undefined ? null : { held: row.held, token: BigInt(row.token) };
}

/** Another holder's acquire: its token, or null when busy. */
export async function grab(admin: pg.Pool, name: string, ttl = "30 s", wait = "0"):
  Promise<bigint | null> {
  const res = await admin.query({
    text: "SELECT dlock_acquire($1, $2::interval, $3::interval) AS t", values: [name, ttl, wait],
  });
  const t = (res.rows[0] as { t: string | null }).t;
  return t === null ? null : BigInt(t);
}

/**
 * A fenced table of the test's own: rows (name, token, body), each row's
 * lock named by its `name` column.
 */
export async function fencedTable(admin: pg.Pool, table: string): Promise<void> {
  await admin.query(`CREATE TABLE IF NOT EXISTS ${table} (
    name text PRIMARY KEY, token bigint NOT NULL, body text NOT NULL)`);
  await admin.query(`CREATE OR REPLACE TRIGGER ${table}_fence
    BEFORE INSERT OR UPDATE OR DELETE ON ${table}
    FOR EACH ROW EXECUTE FUNCTION dlock_fence('name', 'token', 'column')`);
}

/** Fail the test if a promise rejection went unhandled while `fn` ran. */
export async function noLeaks<T>(fn: () => Promise<T>): Promise<T> {
  const leaked: unknown[] = [];
  const onLeak = (reason: unknown): void => {
    leaked.push(reason);
  };
  process.on("unhandledRejection", onLeak);
  try {
    const result = await fn();
    await sleep(50); // let late rejections surface
    if (leaked.length > 0) {
      throw new Error(`unhandled rejections: ${leaked.map(String).join("; ")}`);
    }
    return result;
  } finally {
    process.removeListener("unhandledRejection", onLeak);
  }
}

/**
 * A TCP proxy on 127.0.0.1 in front of the server (or of `target`).
 * `cut()` breaks every connection made so far (a killed backend, a broken
 * network), `refuse()` makes new connections fail at once, `freeze()`
 * keeps them open but forwards nothing (a black hole: statements hang).
 * It reads the protocol from the client's side and keeps the statement
 * name of every Parse message (`parseNames`: "" for the unnamed statement)
 * and the number of simple queries.
 */
export class Proxy {
  readonly parseNames: string[] = [];
  simpleQueries = 0;
  accepted = 0;
  private readonly server: net.Server;
  private readonly target: net.NetConnectOpts;
  private readonly sockets = new Set<net.Socket>();
  private readonly held: Array<[net.Socket, Buffer]> = [];
  private frozen = false;
  private refusing = false;

  private constructor(target: net.NetConnectOpts) {
    this.target = target;
    this.server = net.createServer((client) => this.accept(client));
  }

  static async start(target: net.NetConnectOpts = serverAddress()): Promise<Proxy> {
    const p = new Proxy(target);
    await new Promise<void>((resolve) => p.server.listen(0, "127.0.0.1", resolve));
    return p;
  }

  get port(): number {
    return (this.server.address() as net.AddressInfo).port;
  }

  /** Pool settings that reach the database through the proxy. */
  config(database = DB, extra: pg.PoolConfig = {}): pg.PoolConfig {
    return { host: "127.0.0.1", port: this.port, user: USER, database, ...extra };
  }

  private accept(client: net.Socket): void {
    if (this.refusing) {
      client.destroy();
      return;
    }
    this.accepted += 1;
    const upstream = net.connect(this.target);
    this.sockets.add(client);
    this.sockets.add(upstream);
    const sniff = this.sniffer();
    client.on("data", (buf: Buffer) => {
      sniff(buf);
      this.forward(upstream, buf);
    });
    upstream.on("data", (buf: Buffer) => this.forward(client, buf));
    for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
      a.on("error", () => b.destroy());
      a.on("close", () => {
        this.sockets.delete(a);
        b.destroy();
      });
    }
  }

  private forward(dst: net.Socket, buf: Buffer): void {
    if (this.frozen) {
      this.held.push([dst, buf]);
    } else if (!dst.destroyed) {
      dst.write(buf);
    }
  }

  /** A parser of the frontend's messages: startup first, then typed messages. */
  private sniffer(): (buf: Buffer) => void {
    let pending = Buffer.alloc(0);
    let startup = true;
    return (buf: Buffer): void => {
      pending = Buffer.concat([pending, buf]);
      for (;;) {
        if (startup) {
          if (pending.length < 8) {
            return;
          }
          const len = pending.readInt32BE(0);
          if (pending.length < len) {
            return;
          }
          const code = pending.readInt32BE(4);
          pending = pending.subarray(len);
          // SSLRequest and GSSENCRequest come before the real startup.
          startup = code === 80877103 || code === 80877104;
          continue;
        }
        if (pending.length < 5) {
          return;
        }
        const len = pending.readInt32BE(1);
        if (pending.length < 1 + len) {
          return;
        }
        const type = String.fromCharCode(pending[0] as number);
        if (type === "P") {
          const end = pending.indexOf(0, 5);
          this.parseNames.push(pending.subarray(5, end).toString("utf8"));
        } else if (type === "Q") {
          this.simpleQueries += 1;
        }
        pending = pending.subarray(1 + len);
      }
    };
  }

  cut(): void {
    for (const s of this.sockets) {
      s.destroy();
    }
    this.sockets.clear();
    this.held.length = 0;
  }

  refuse(): void {
    this.refusing = true;
  }

  freeze(): void {
    this.frozen = true;
  }

  thaw(): void {
    this.frozen = false;
    for (const [dst, buf] of this.held.splice(0)) {
      if (!dst.destroyed) {
        dst.write(buf);
      }
    }
  }

  async close(): Promise<void> {
    this.refusing = true;
    this.frozen = false;
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A port nobody listens on now (the kernel's choice), or DLOCK_NODE_PGB_PORT. */
async function freePort(): Promise<number> {
  if (process.env.DLOCK_NODE_PGB_PORT) {
    return Number(process.env.DLOCK_NODE_PGB_PORT);
  }
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/**
 * Debian's PgBouncer (/usr/sbin/pgbouncer, or PGBOUNCER) in transaction
 * pooling mode on 127.0.0.1, `serverConnections` server connections, in
 * front of the database; stopped by `stop()`.
 */
export class Bouncer {
  readonly port: number;
  private readonly dir: string;
  private readonly child: ChildProcess;
  private output = "";

  private constructor(port: number, dir: string, child: ChildProcess) {
    this.port = port;
    this.dir = dir;
    this.child = child;
    child.stdout?.on("data", (b: Buffer) => (this.output += b.toString()));
    child.stderr?.on("data", (b: Buffer) => (this.output += b.toString()));
  }

  static async start(serverConnections = 2): Promise<Bouncer> {
    const dir = mkdtempSync(path.join(os.tmpdir(), "dlock-node-pgbouncer-"));
    const port = await freePort();
    writeFileSync(path.join(dir, "userlist.txt"), `"${USER}" ""\n`);
    writeFileSync(path.join(dir, "pgbouncer.ini"), [
      "[databases]",
      `${DB} = host=${HOST} port=${PORT} dbname=${DB}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = trust",
      `auth_file = ${path.join(dir, "userlist.txt")}`,
      "pool_mode = transaction",
      `default_pool_size = ${serverConnections}`,
      "min_pool_size = 0",
      "reserve_pool_size = 0",
      `max_db_connections = ${serverConnections}`,
      "max_client_conn = 100",
      "server_reset_query =",
      `logfile = ${path.join(dir, "pgbouncer.log")}`,
      "",
    ].join("\n"));
    const child = spawn(process.env.PGBOUNCER ?? "/usr/sbin/pgbouncer",
      [path.join(dir, "pgbouncer.ini")], { stdio: ["ignore", "pipe", "pipe"] });
    const b = new Bouncer(port, dir, child);
    try {
      await waitFor(async () => {
        if (child.exitCode !== null) {
          throw new Error(`pgbouncer exited (${child.exitCode}): ${b.output}`);
        }
        const c = new pg.Client({ host: "127.0.0.1", port, user: USER, database: DB });
        c.on("error", () => {});
        try {
          await c.connect();
          await c.query("SELECT 1");
          return true;
        } catch {
          return false;
        } finally {
          await c.end().catch(() => {});
        }
      }, 15000, "pgbouncer to accept connections");
    } catch (err) {
      await b.stop();
      throw err;
    }
    return b;
  }

  get address(): net.NetConnectOpts {
    return { host: "127.0.0.1", port: this.port };
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null) {
      const exited = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
      this.child.kill("SIGTERM");
      const timer = setTimeout(() => this.child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
