// What the per-engine benchmarks share: each engine runs in a child process of the benchmark's own file (so its
// peak RSS is its own), started with `--engine <mode>`, and answers one JSON line as its last line of output.
import { spawn } from "node:child_process";
import process from "node:process";

export type EngineMode = "native" | "wasm";

/** The `--engine` a child was started with, or null in the parent. */
export function childEngine(): EngineMode | null {
  const at = process.argv.indexOf("--engine");
  return at > 0 ? (process.argv[at + 1] as EngineMode) : null;
}

/** Runs `file` (the benchmark's import.meta.url) as a child for `mode` and resolves with its last JSON line. */
export function runEngineChild<T>(file: string, mode: EngineMode): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", new URL(file).pathname, "--engine", mode], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.on("exit", (code) =>
      code === 0
        ? resolve(JSON.parse(out.trim().split("\n").at(-1)!) as T)
        : reject(new Error(`${mode} exited ${code}`)),
    );
  });
}
