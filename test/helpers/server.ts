// The real server (main.ts) as a child process, for tests that need what only a separate process gives:
// being killed mid-work, then started again on the same database. Each server runs in its own process
// group, so a kill reaches everything it started; every server still running is killed when the test
// process exits, however it exits.
import type { ChildProcess } from "node:child_process";
import net from "node:net";
import process from "node:process";
import { seedEmbeddedDataDir } from "../../testkit/pglite-template.ts";
import { spawnGroup } from "./process-group.ts";

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal); // the whole group: node and anything it spawned
  } catch {
    try {
      child.kill(signal);
    } catch {
      // already gone
    }
  }
}

/** A TCP port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = net.createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolvePort(port));
    });
  });
}

export interface ServerProcess {
  /** `http://127.0.0.1:<port>` */
  url: string;
  pid: number;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** SIGKILL to the whole process group; resolves once the process has exited. */
  kill(): Promise<void>;
  /** SIGTERM (graceful shutdown: queue stopped, database closed); SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts `node --import tsx main.ts` with `env` over a minimal environment (PORT is chosen here) and
 * resolves once it prints its "listening" line (a `ROLE=worker` process, which serves no API: its "running"
 * line; its `url` then answers nothing). Rejects, with the process's output, when it exits first
 * or does not listen within `timeoutMs`.
 */
export async function startServer(env: Record<string, string>, timeoutMs = 60_000): Promise<ServerProcess> {
  // A new embedded DATA_DIR gets initdb's files from the test kit's template, so the server resumes instead of
  // running initdb (8-17 s each in a loaded run). The real first boot stays tested: boot.test.ts opens new
  // directories itself, and main-process.ts's spawnMain seeds nothing.
  if (env.DATA_DIR && !env.DATABASE_URL) await seedEmbeddedDataDir(env.DATA_DIR);
  const port = await freePort();
  const { child, output } = spawnGroup([process.execPath, "--import", "tsx", "main.ts"], {
    PORT: String(port),
    ...env,
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolveExit) => {
    child.once("exit", (code, signal) => resolveExit({ code, signal }));
  });

  const server: ServerProcess = {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    output,
    exited,
    async kill() {
      killGroup(child, "SIGKILL");
      await exited;
    },
    async stop(graceMs = 20_000) {
      killGroup(child, "SIGTERM");
      const timer = setTimeout(() => killGroup(child, "SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };

  const until = Date.now() + timeoutMs;
  let early: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  void exited.then((e) => (early = e));
  const ready = env.ROLE === "worker" ? "mediagate worker running" : "mediagate listening on";
  while (!output().includes(ready)) {
    if (early) throw new Error(`server exited before listening (${JSON.stringify(early)}):\n${output()}`);
    if (Date.now() > until) {
      await server.kill();
      throw new Error(`server did not listen within ${timeoutMs} ms:\n${output()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return server;
}
