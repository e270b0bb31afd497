// One way to start a child process for the tests that need a real one (main-process.ts, server.ts, the 1 GB
// upload): in its own process group, so kill(-pid) reaches its children too, with `env` over a minimal
// environment (PATH, HOME, TMPDIR, HOST=127.0.0.1), from the project root, its stdout and stderr gathered in
// one string. Every child still running when the test process exits is killed with its group.
import { type ChildProcess, spawn } from "node:child_process";
import { resolve } from "node:path";
import process from "node:process";

export const ROOT = resolve(import.meta.dirname ?? "test/helpers", "../..");
const running = new Set<ChildProcess>();

process.on("exit", () => {
  for (const child of running) {
    if (child.pid === undefined) continue;
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // the group is gone
    }
  }
});

export interface GroupChild {
  child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
}

/** Spawns `command` (its first word the program) detached, with `env` over the minimal environment. */
export function spawnGroup(command: string[], env: Record<string, string>): GroupChild {
  const child = spawn(command[0]!, command.slice(1), {
    cwd: ROOT,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? "/tmp",
      TMPDIR: process.env.TMPDIR ?? "/tmp",
      HOST: "127.0.0.1",
      ...env,
    },
  });
  running.add(child);
  child.once("exit", () => running.delete(child));
  let out = "";
  child.stdout!.setEncoding("utf8").on("data", (s: string) => (out += s));
  child.stderr!.setEncoding("utf8").on("data", (s: string) => (out += s));
  return { child, output: () => out };
}
