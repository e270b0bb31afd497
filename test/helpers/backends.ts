// Which backends the tests loop over. PGlite and the in-process stores always; Postgres and Redis whenever
// they answer (TEST_DATABASE_URL / TEST_REDIS_URL, or the local services on 127.0.0.1). Like kysely's own
// suite, a behaviour that depends on the backend is tested once per backend with the same test body.

import { randomBytes } from "node:crypto";
import net from "node:net";
import process from "node:process";
import pg from "pg";
import { onAfterAll } from "./lifecycle.ts";

function reachable(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

let pgUrl: Promise<string | undefined> | undefined;
/** The admin URL of a reachable Postgres server, or undefined. */
export function postgresUrl(): Promise<string | undefined> {
  pgUrl ??= (async () => {
    if (process.env.TEST_DATABASE_URL) return process.env.TEST_DATABASE_URL;
    if (process.env.TEST_NO_POSTGRES) return undefined;
    if (!(await reachable("127.0.0.1", 5432))) return undefined;
    for (const user of [process.env.PGUSER, "postgres", "root"].filter(Boolean)) {
      const url = `postgres://${user}@127.0.0.1:5432/postgres`;
      const client = new pg.Client({ connectionString: url });
      try {
        await client.connect();
        await client.query("select 1");
        return url;
      } catch {
        // try the next role
      } finally {
        await client.end().catch(() => {});
      }
    }
    return undefined;
  })();
  return pgUrl;
}

let redisUrlP: Promise<string | undefined> | undefined;
/** The URL of a reachable Redis server, or undefined. */
export function redisUrl(): Promise<string | undefined> {
  redisUrlP ??= (async () => {
    if (process.env.TEST_REDIS_URL) return process.env.TEST_REDIS_URL;
    if (process.env.TEST_NO_REDIS) return undefined;
    return (await reachable("127.0.0.1", 6379)) ? "redis://127.0.0.1:6379" : undefined;
  })();
  return redisUrlP;
}

/**
 * A fresh, empty Postgres database for one test (pg-boss's habit: no test sees another's rows).
 * Dropped when the run ends (when this process's lifecycle cleanups run).
 */
export async function isolatedPostgresDatabase(): Promise<string> {
  const admin = await postgresUrl();
  if (!admin) throw new Error("no Postgres server is reachable");
  const name = `mediagate_test_${randomBytes(6).toString("hex")}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  await client.query(`create database ${name}`);
  await client.end();
  if (!toDrop.size) onAfterAll(() => dropDatabases(admin));
  toDrop.add(name);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return url.toString();
}

const toDrop = new Set<string>();

// Every DROP DATABASE waits for a checkpoint (seconds each on a busy machine, and a run makes dozens of
// databases per process); drops that run at the same time share one, so they go a few at a time.
async function dropDatabases(admin: string): Promise<void> {
  const names = [...toDrop];
  toDrop.clear();
  const failures: string[] = [];
  const lane = async () => {
    const c = new pg.Client({ connectionString: admin });
    await c.connect();
    try {
      for (let name = names.shift(); name; name = names.shift()) {
        await c
          .query(`drop database if exists ${name} with (force)`)
          .catch((err) => failures.push(`${name}: ${err.message}`));
      }
    } finally {
      await c.end().catch(() => {});
    }
  };
  await Promise.all(Array.from({ length: Math.min(8, names.length) }, lane));
  if (failures.length) throw new Error(`could not drop ${failures.length} test database(s):\n${failures.join("\n")}`);
}

/** A Redis key prefix no other test uses; its keys are deleted when the run ends. */
export function isolatedRedisPrefix(): string {
  return `mgtest:${randomBytes(4).toString("hex")}:`;
}

export type DatabaseBackend = { name: "pglite" } | { name: "postgres"; url: string };

/** The database backends to loop a test over: PGlite always, Postgres when reachable. */
export async function databaseBackends(): Promise<DatabaseBackend[]> {
  const url = await postgresUrl();
  return url ? [{ name: "pglite" }, { name: "postgres", url }] : [{ name: "pglite" }];
}

export type StoreBackend = { name: "memory" } | { name: "redis"; url: string };

/** The counter/pub-sub backends to loop a test over: memory always, Redis when reachable. */
export async function storeBackends(): Promise<StoreBackend[]> {
  const url = await redisUrl();
  return url ? [{ name: "memory" }, { name: "redis", url }] : [{ name: "memory" }];
}
