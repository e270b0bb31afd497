// A Postgres server of the test's own, to stop and start under load without touching the shared one
// (127.0.0.1:5432, which every other test uses).
//
//   const pg = await privatePostgres();            // undefined (with the reason printed) where it cannot run
//   if (!pg) return;
//   pg.url                 // postgres://postgres@127.0.0.1:<port>/postgres (trust auth, no password)
//   await pg.createDatabase("name")  -> its URL
//   await pg.stop("fast")  // or "immediate" (a crash: no checkpoint, clients see the socket drop)
//   await pg.start()       // same data, same port
//   await pg.restart("immediate")
//   pg.running             // whether start() was the last of the two
//   await pg.destroy()     // stop (immediate) and remove the data; also registered with onAfterAll
//   privatePostgresUnavailable()  -> the reason it cannot run here, or undefined
//
// The cluster is made by initdb (a fresh one per call, a second or two) from /usr/lib/postgresql/<n>/bin,
// run as the `postgres` OS user when this process is root (initdb refuses root), its data directory and
// socket directory under os.tmpdir(), on a free TCP port of 127.0.0.1, with fsync off (a test's data need
// not survive a power cut, and fsync would make each start and stop slower on a shared disk). Commits stay
// synchronous: an "immediate" stop is a crash of the server, not of the machine, and must keep every commit.
import { execFile } from "node:child_process";
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import pg from "pg";
import { onAfterAll } from "./lifecycle.ts";

export type StopMode = "fast" | "immediate";

export interface PrivatePostgres {
  /** The admin URL (the `postgres` role, database `postgres`). */
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  readonly running: boolean;
  /** A new, empty database on this server; its URL. */
  createDatabase(name: string): Promise<string>;
  /** Starts the server (no-op when running); resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops the server (no-op when stopped): "fast" ends sessions cleanly, "immediate" drops them like a crash. */
  stop(mode?: StopMode): Promise<void>;
  restart(mode?: StopMode): Promise<void>;
  /** Stops the server and removes its files. */
  destroy(): Promise<void>;
}

function binDir(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, "bin", "initdb")) && existsSync(join(root, v, "bin", "pg_ctl")))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length ? join(root, versions[0]!, "bin") : undefined;
}

const isRoot = () => process.getuid?.() === 0;

/** Why a private server cannot run here, or undefined when it can. */
export function privatePostgresUnavailable(): string | undefined {
  if (process.platform !== "linux") return "private Postgres needs Linux";
  if (!binDir()) return "no initdb/pg_ctl under /usr/lib/postgresql/*/bin";
  if (isRoot()) {
    try {
      if (!existsSync("/usr/sbin/runuser") && !existsSync("/sbin/runuser") && !existsSync("/usr/bin/runuser"))
        return "running as root without runuser";
      userInfoOf("postgres");
    } catch {
      return "running as root and there is no `postgres` OS user to run initdb as";
    }
  }
  return undefined;
}

function userInfoOf(name: string): { uid: number; gid: number } {
  // /etc/passwd: name:x:uid:gid:...
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((l) => l.startsWith(`${name}:`));
  if (!line) throw new Error(`no user ${name}`);
  const [, , uid, gid] = line.split(":");
  return { uid: Number(uid), gid: Number(gid) };
}

function run(cmd: string, args: string[], timeoutMs = 60_000): Promise<string> {
  const [file, argv] = isRoot() ? ["runuser", ["-u", "postgres", "--", cmd, ...args]] : [cmd, args];
  return new Promise((resolve, reject) => {
    execFile(file, argv, { timeout: timeoutMs, env: { ...process.env, LC_ALL: "C" } }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(" ")}: ${err.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A fresh cluster, started. Undefined (and the reason printed once) where it cannot run, so a test can
 * skip: `const server = await privatePostgres(); if (!server) return;`.
 */
export async function privatePostgres(): Promise<PrivatePostgres | undefined> {
  const reason = privatePostgresUnavailable();
  if (reason) {
    console.log(`  (skipped: ${reason})`);
    return undefined;
  }
  const bin = binDir()!;
  const home = mkdtempSync(join(tmpdir(), "mediagate-pg-"));
  const dataDir = join(home, "data");
  const socketDir = join(home, "sock");
  mkdirSync(socketDir);
  if (isRoot()) {
    const { uid, gid } = userInfoOf("postgres");
    chownSync(home, uid, gid);
    chownSync(socketDir, uid, gid);
  }
  await run(join(bin, "initdb"), ["-D", dataDir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"]);
  const port = await freePort();
  const logFile = join(home, "server.log");
  // Small, so a test's server does not take the memory of the shared one.
  const options = `-p ${port} -k ${socketDir} -c listen_addresses=127.0.0.1 -c fsync=off -c shared_buffers=16MB -c max_connections=100`;
  let running = false;
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;

  const start = async () => {
    if (running) return;
    await run(join(bin, "pg_ctl"), ["-D", dataDir, "-l", logFile, "-o", options, "-w", "-t", "30", "start"]);
    running = true;
  };
  const stop = async (mode: StopMode = "fast") => {
    if (!running) return;
    await run(join(bin, "pg_ctl"), ["-D", dataDir, "-m", mode, "-w", "-t", "30", "stop"]);
    running = false;
  };
  let destroyed = false;
  const destroy = async () => {
    if (destroyed) return;
    destroyed = true;
    await stop("immediate").catch(() => {});
    rmSync(home, { recursive: true, force: true });
  };
  onAfterAll(destroy);
  try {
    await start();
  } catch (err) {
    await destroy();
    throw err;
  }
  return {
    url,
    port,
    dataDir,
    get running() {
      return running;
    },
    async createDatabase(name: string) {
      if (!/^[a-z_][a-z0-9_]*$/.test(name))
        throw new Error(`database name ${name}: lower-case letters, digits and _ only`);
      const client = new pg.Client({ connectionString: url });
      client.on("error", () => {});
      await client.connect();
      try {
        await client.query(`create database ${name}`);
      } finally {
        await client.end().catch(() => {});
      }
      const u = new URL(url);
      u.pathname = `/${name}`;
      return u.toString();
    },
    start,
    stop,
    restart: async (mode: StopMode = "fast") => {
      await stop(mode);
      await start();
    },
    destroy,
  };
}
