// What an idle server costs: the real server (main.ts, ROLE=all, every plugin) on each database, left alone
// after it boots. Reports its resident memory, its CPU share, and on Postgres the transactions its database
// commits per second (pg_stat_database.xact_commit). Each connection sends its counts up to a minute late,
// so the window starts after BENCH_IDLE_SETTLE_S (default 75) and the set-up's commits are not counted.
//
//   npx tsx test/bench/idle.bench.ts          BENCH_IDLE_SETTLE_S, BENCH_IDLE_WINDOW_S (default 30)
//
// Issue 20's targets: an embedded server under 300 MB at rest, under 1 transaction a second on Postgres.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import pg from "pg";
import { isolatedPostgresDatabase, postgresUrl } from "../helpers/backends.ts";
import { afterAll } from "../helpers/lifecycle.ts";
import { startServer } from "../helpers/server.ts";

const SETTLE_S = Number(process.env.BENCH_IDLE_SETTLE_S ?? 75);
const WINDOW_S = Number(process.env.BENCH_IDLE_WINDOW_S ?? 30);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resident memory (MB) and CPU seconds so far of a process, from /proc. */
function sample(pid: number): { rssMb: number; cpuS: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  // Fields 14 and 15 (utime, stime) of /proc/<pid>/stat, after the parenthesised name.
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  return { rssMb: rssKb / 1024, cpuS: ticks / 100 };
}

async function committed(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      "SELECT xact_commit::int AS n FROM pg_stat_database WHERE datname = current_database()",
    );
    return rows[0].n;
  } finally {
    await client.end();
  }
}

async function measure(name: string, env: Record<string, string>, databaseUrl?: string) {
  const server = await startServer(
    { ROLE: "all", LOG_LEVEL: "warn", ADMIN_TOKEN: "bench-admin-token-0123456789abcdef0123", ...env },
    180_000,
  );
  try {
    await sleep(SETTLE_S * 1000);
    const before = sample(server.pid);
    const x0 = databaseUrl ? await committed(databaseUrl) : 0;
    let peak = before.rssMb;
    for (let s = 0; s < WINDOW_S; s++) {
      await sleep(1000);
      peak = Math.max(peak, sample(server.pid).rssMb);
    }
    const after = sample(server.pid);
    // Less our own reading of the count, which commits once.
    const tps = databaseUrl ? ((await committed(databaseUrl)) - x0 - 1) / WINDOW_S : undefined;
    const cpu = ((after.cpuS - before.cpuS) / WINDOW_S) * 100;
    console.log(
      `${name.padEnd(9)} RSS ${after.rssMb.toFixed(0)} MB (peak ${peak.toFixed(0)})  CPU ${cpu.toFixed(1)} %` +
        (tps === undefined ? "" : `  ${tps.toFixed(2)} transactions/s`),
    );
  } finally {
    await server.stop(15_000);
  }
}

console.log(`idle server, ROLE=all, every plugin: ${SETTLE_S} s to settle, then ${WINDOW_S} s measured`);
const dataDir = mkdtempSync(join(tmpdir(), "mediagate-idle-"));
try {
  await measure("pglite", { DATA_DIR: dataDir });
  if (await postgresUrl()) {
    const url = await isolatedPostgresDatabase();
    await measure("postgres", { DATA_DIR: dataDir, DATABASE_URL: url }, url);
  }
} finally {
  rmSync(dataDir, { recursive: true, force: true });
  await afterAll();
}
process.exit(0);
