// What the kill -9 tests share (test/*/restart.test.ts): a fresh DATA_DIR and database per test with its
// servers killed after it (restartRig), JSON calls to a real server started by test/helpers/server.ts with a
// partner key or the admin token, polling until a condition holds, and a partner's ledger read back.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Kysely } from "kysely";
import type { Test } from "uvu";
import { openDatabase } from "../../storage/db.ts";
import type { KernelTables } from "../../storage/tables.ts";
import { type DatabaseBackend, isolatedPostgresDatabase } from "./backends.ts";
import { type ServerProcess, startServer } from "./server.ts";

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A path of the partner API. */
export const api = (path: string) => `/api/v1/partner${path}`;

/** Calls over HTTP as a partner (`key`) or as the operator (`adminToken`); the body parsed when it is JSON. */
export async function call(
  server: ServerProcess,
  method: string,
  path: string,
  opts: { key?: string; adminToken?: string; body?: unknown } = {},
) {
  const headers: Record<string, string> = { "user-agent": "mediagate-restart-test/1.0" };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  if (opts.adminToken) headers.authorization = `Bearer ${opts.adminToken}`;
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  const send = () =>
    fetch(server.url + path, {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
  let res: Response;
  try {
    res = await send();
  } catch (err) {
    // A GET on a pooled keep-alive socket the server was closing as it was reused fails with "fetch failed"
    // (seen on a loaded machine); a read is safe to send again. A server that is really gone fails twice.
    if (method !== "GET") throw err;
    await sleep(100);
    res = await send();
  }
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, body };
}

/** A `call` answer (or a list of them) refused by a rate limit. */
const limited = (v: unknown): boolean =>
  Array.isArray(v)
    ? v.some(limited)
    : typeof v === "object" && v !== null && (v as { status?: unknown }).status === 429;

/**
 * Reads until `done` holds; fails with `what` and the last value after `ms`. A 429 read is still "not yet" (a
 * test may poll a path whose limit it did not raise), but it is reported once on stderr, where the runner
 * shows it with the file's output.
 */
export async function until<T>(
  read: () => Promise<T>,
  done: (v: T) => boolean,
  what: string,
  ms = 180_000,
  everyMs = 100,
): Promise<T> {
  const end = Date.now() + ms;
  let warned = false;
  for (;;) {
    const v = await read();
    if (!warned && limited(v)) {
      // Not "not yet": a rate limit, waited out in silence (up to its window, a minute), looked like a slow
      // recovery. Said once in the file's output; the test should raise its partner's limit for the path.
      warned = true;
      process.stderr.write(
        `until(${what.split("\n")[0]}): answered 429 (a rate limit; raise the test partner's limit for this path): ${JSON.stringify(v).slice(0, 300)}\n`,
      );
    }
    if (done(v)) return v;
    if (Date.now() > end) throw new Error(`${what}: ${JSON.stringify(v)}`);
    await sleep(everyMs);
  }
}

/** What one kill -9 test works with: a fresh DATA_DIR (and, on Postgres, a database of its own) per test. */
export interface RestartRig {
  /** The environment every server of the running test starts with. */
  readonly env: Record<string, string>;
  readonly dataDir: string;
  /** Set on the Postgres backend. */
  readonly databaseUrl: string | undefined;
  /** Starts main.ts on the test's database and DATA_DIR; it is killed after the test if still running. */
  start(): Promise<ServerProcess>;
  /** Every server's output, for failure messages. */
  logs(): string;
  /** A partner made through the admin API, with the rate limits the test's polling needs. */
  partner(
    server: ServerProcess,
    name: string,
    credits: number,
    limits?: Record<string, unknown>,
  ): Promise<{ partnerId: string; key: string }>;
  /** The test's database opened directly (once the last server has stopped, on PGlite). */
  openDatabase(): ReturnType<typeof openDatabase>;
}

/**
 * Registers on `t` the start and end of every kill -9 test (test/*\/restart.test.ts): before each, a new
 * DATA_DIR and database and the servers' environment (`env` over ADMIN_TOKEN and LOG_LEVEL=warn); after each,
 * every server it started killed and the DATA_DIR removed, whatever the test's outcome.
 */
export function restartRig(
  t: Test,
  backend: DatabaseBackend,
  options: { adminToken: string; env?: Record<string, string> | (() => Record<string, string>) },
): RestartRig {
  const servers: ServerProcess[] = [];
  let dataDir = "";
  let databaseUrl: string | undefined;
  // A function when the environment names what the test starts first (a stand-in's port): read at each start.
  const env = () => ({
    DATA_DIR: dataDir,
    ADMIN_TOKEN: options.adminToken,
    LOG_LEVEL: "warn",
    ...(typeof options.env === "function" ? options.env() : options.env),
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  });
  t.before.each(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "mediagate-restart-"));
    databaseUrl = backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined;
  });
  t.after.each(async () => {
    for (const s of servers.splice(0)) await s.kill();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    dataDir = "";
  });
  const adminToken = options.adminToken;
  return {
    get env() {
      return env();
    },
    get dataDir() {
      return dataDir;
    },
    get databaseUrl() {
      return databaseUrl;
    },
    async start() {
      const server = await startServer(env());
      servers.push(server);
      return server;
    },
    logs: () => servers.map((s, i) => `--- server ${i + 1} (pid ${s.pid}) ---\n${s.output()}`).join("\n"),
    async partner(server, name, credits, limits) {
      const created = await call(server, "POST", "/api/v1/admin/partners", { adminToken, body: { name, credits } });
      if (created.status !== 201)
        throw new Error(`creating the partner: ${created.status} ${JSON.stringify(created.body)}`);
      const { partner_id: partnerId, api_key: key } = created.body as { partner_id: string; api_key: string };
      // Limits are set by PATCH (creating a partner takes none).
      if (limits) {
        const patched = await call(server, "PATCH", `/api/v1/admin/partners/${partnerId}`, {
          adminToken,
          body: { limits },
        });
        if (patched.status !== 200)
          throw new Error(`setting the partner's limits: ${patched.status} ${JSON.stringify(patched.body)}`);
      }
      return { partnerId, key };
    },
    openDatabase: () => openDatabase(databaseUrl ? { url: databaseUrl } : { dataDir }),
  };
}

/** A partner's ledger and the balance the database holds for it (which must be the ledger's sum). */
export async function ledgerOf(db: Kysely<KernelTables>, partnerId: string) {
  const ledger = await db.selectFrom("ledger").selectAll().where("partner_id", "=", partnerId).orderBy("id").execute();
  const partner = await db
    .selectFrom("partners")
    .select("credits_remaining")
    .where("id", "=", partnerId)
    .executeTakeFirstOrThrow();
  return { ledger, balance: Number(partner.credits_remaining), sum: ledger.reduce((n, e) => n + Number(e.amount), 0) };
}
