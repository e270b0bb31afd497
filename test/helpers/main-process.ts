// main.ts (or `npm start`) as a child process in its own process group, for tests of what only a real
// process shows: how it boots or refuses to, its probes, its signals. Unlike server.ts's startServer, it
// waits for any line (a worker prints no "listening"), or for the process to exit, and takes the command.
// Every process still running when the test process exits is killed with its group.
import type { ChildProcess } from "node:child_process";
import process from "node:process";
import { spawnGroup } from "./process-group.ts";

export { ROOT } from "./process-group.ts";

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // the group is gone
  }
}

/** Whether any process of the group `pgid` is still alive. */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as { code?: string }).code === "EPERM";
  }
}

export interface MainProcess {
  pid: number;
  output(): string;
  /** Resolves when `pattern` appears in the output; rejects with the output when the process exits first or after `timeoutMs`. */
  waitFor(pattern: RegExp | string, timeoutMs?: number): Promise<void>;
  /** The exit, or null if it has not exited within `timeoutMs`. */
  exit(timeoutMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null } | null>;
  /** SIGKILL to the whole group. */
  kill(): Promise<void>;
}

/**
 * Spawns `command` (default: node --import tsx main.ts) from the project root with `env` over a minimal
 * environment (PATH, HOME, TMPDIR, HOST=127.0.0.1).
 */
export function spawnMain(
  env: Record<string, string>,
  command: string[] = [process.execPath, "--import", "tsx", "main.ts"],
): MainProcess {
  const { child, output } = spawnGroup(command, env);
  let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  // "exit" can come before the last bytes of stdout/stderr are read (a busy machine showed a refusal's one
  // line missing); the exit is reported once both pipes have ended, or after a second if a grandchild that
  // outlived the process still holds them.
  const drained = (stream: NodeJS.ReadableStream) =>
    new Promise<void>((r) => (stream.once("end", () => r()), stream.once("close", () => r())));
  const pipesDone = Promise.all([drained(child.stdout!), drained(child.stderr!)]);
  const exitP = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) =>
    child.once("exit", (code, signal) => {
      void Promise.race([pipesDone, new Promise((r) => setTimeout(r, 1000))]).then(() =>
        res((exited = { code, signal })),
      );
    }),
  );
  return {
    pid: child.pid!,
    output,
    async waitFor(pattern, timeoutMs = 90_000) {
      const until = Date.now() + timeoutMs;
      const seen = () => (typeof pattern === "string" ? output().includes(pattern) : pattern.test(output()));
      while (!seen()) {
        if (exited) throw new Error(`exited (${JSON.stringify(exited)}) before ${pattern}:\n${output()}`);
        if (Date.now() > until) throw new Error(`no ${pattern} within ${timeoutMs} ms:\n${output()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async exit(timeoutMs) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const result = await Promise.race([
        exitP,
        new Promise<null>((r) => (timer = setTimeout(() => r(null), timeoutMs))),
      ]);
      clearTimeout(timer);
      return result;
    },
    async kill() {
      killGroup(child, "SIGKILL");
      if (!exited) await exitP;
    },
  };
}

/** Sends SIGTERM and throws, with the process's output, unless it exits with code 0 within a minute. */
export async function stopsCleanly(server: MainProcess): Promise<void> {
  process.kill(server.pid, "SIGTERM");
  const exit = await server.exit(60_000);
  if (!exit) throw new Error(`still running 60 s after SIGTERM:\n${server.output()}`);
  if (exit.code !== 0) throw new Error(`exited ${exit.code ?? exit.signal} after SIGTERM:\n${server.output()}`);
}
