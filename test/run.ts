// Runs every *.test.ts under test/ (or the files and folders named on the command line) with uvu, in
// parallel worker processes, and ends with the line "N passed, N failed" (", N skipped" when any) that CI
// reads; exits 1 when a test failed, a file could not be imported, a worker crashed or a file timed out.
//
//   TEST_WORKERS        worker processes (default 4, see DEFAULT_WORKERS); 1 runs every file in this
//                       process, one after another, like the runner always did (handy under a debugger)
//   TEST_FILE_TIMEOUT_S a file still running after this many seconds fails and its worker is killed
//                       (default 600); a new worker takes the remaining files
//
// Files are handed out one at a time to whichever worker is free, longest first: .test-data/timings.json
// keeps each file's time from earlier runs on this machine, test/timings.json (committed) those of a full
// CI run for a fresh clone, and files in neither are estimated from their size. Started last, a long file
// would run alone at the end: refresh test/timings.json from .test-data/timings.json after adding long
// tests. Each worker
// runs its files with uvu's deferred queue exactly as the serial runner does (test/helpers/run-file.ts),
// and runs its own lifecycle cleanups (test/helpers/lifecycle.ts) before it exits. A file's result is
// printed as one block when the file ends.
import { type ChildProcess, fork } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import process from "node:process";
import type { FileResult } from "./helpers/run-file.ts";
import { CLEANUP_LIMIT_S, type FromWorker, type ToWorker } from "./helpers/run-protocol.ts";

const started = performance.now();
const ROOT = resolve(import.meta.dirname ?? "test", "..");
// Our tests, and the examples' own tests (a third-party plugin's test lives beside the plugin).
const TEST_DIRS = [join(ROOT, "test"), join(ROOT, "examples")];
const TIMINGS = join(ROOT, ".test-data", "timings.json");
const COMMITTED_TIMINGS = join(ROOT, "test", "timings.json");
// Measured on the 2-CPU machine (most test time is waiting: Postgres, timers, child processes, job polls):
// the whole suite took 1349 s with 4 workers and 1793 s with 3, the per-file times adding up to about the
// same (5211 s and 5330 s), so a fourth worker is nearly free. Both runs shared the machine with other
// work (load average 17-22), so the numbers are rough. Each worker may hold a few dozen Postgres
// connections at a time (max_connections is 100 by default): keep that in mind before raising it.
// Not raised to 5 or 6 (issue 37 item 8): the suite has since become CPU-bound on these machines. A file's time
// now grows with the load (test/captions/restart 156 s at load 19, 284 s at load 41; test/video/restart 165 s
// in CI, 269-382 s at load 26), so a fifth worker would slow every file by about what it adds, finishing no
// sooner while bringing each test's own time-outs closer. And each main.ts on Postgres may open 21 connections
// (storage/db.ts pool 10, pg-boss 10, LISTEN 1): test/api/several-hosts runs four, 84 of the 100 alone.
const DEFAULT_WORKERS = 4;

function findTests(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== "bench" && name !== "helpers" && name !== "node_modules") out.push(...findTests(path));
    } else if (name.endsWith(".test.ts")) out.push(path);
  }
  return out;
}

function positiveInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) {
    console.error(`${name} must be a positive integer, not ${JSON.stringify(raw)}`);
    process.exit(2);
  }
  return n;
}

const args = process.argv.slice(2);
// Arguments may name test files or folders of them.
const files = [
  ...new Set(
    args.length
      ? args.flatMap((f) => (statSync(resolve(f)).isDirectory() ? findTests(resolve(f)) : [resolve(f)]))
      : TEST_DIRS.flatMap(findTests),
  ),
];
const workerCount = Math.max(1, Math.min(positiveInt("TEST_WORKERS", DEFAULT_WORKERS), files.length));
const timeoutMs = positiveInt("TEST_FILE_TIMEOUT_S", 600) * 1000;

// ---------------------------------------------------------------------------------------------------------
// Totals and output

let passed = 0;
let failed = 0;
let skipped = 0;
const failedFiles: string[] = [];
const timings: Record<string, number> = {};
let write: (text: string) => void = (text) => void process.stdout.write(text);

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;
const indent = (text: string) =>
  text
    .replace(/[ \t]+$/gm, "")
    .replace(/\s+$/, "")
    .replace(/^/gm, "    ");

function record(r: FileResult, extra = ""): void {
  passed += r.passed;
  failed += r.failed;
  skipped += r.skipped;
  if (r.failed) failedFiles.push(r.file);
  timings[r.file] = Math.round(r.ms);
  const counts = [r.failed ? `${r.passed} passed, ${r.failed} failed` : `✓ ${r.passed}`];
  if (r.skipped) counts.push(`${r.skipped} skipped`);
  let block = `${r.failed ? "✘" : "✓"} ${r.file}  ${counts.join(", ")}  (${seconds(r.ms)}${extra})\n`;
  for (const err of r.errors) block += `${indent(err)}\n\n`;
  const output = r.output.trim();
  if (output) block += `  output:\n${indent(output)}\n\n`;
  write(block);
}

/** An error outside any file (a late unhandled rejection, a cleanup or worker failure): one more failure. */
function stray(where: string, text: string): void {
  failed++;
  failedFiles.push(where);
  write(`✘ ${where}\n${indent(text)}\n\n`);
}

function finish(interrupted = false): never {
  const wall = performance.now() - started;
  saveTimings();
  let tail = "";
  if (failedFiles.length) tail += `\nFailed: ${[...new Set(failedFiles)].join(", ")}\n`;
  tail += `\nWall time: ${seconds(wall)} (${files.length} files, ${workerCount} worker${workerCount === 1 ? "" : "s"})\n`;
  tail += `${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}\n`;
  write(tail);
  process.exit(interrupted ? 130 : failed ? 1 : 0);
}

// ---------------------------------------------------------------------------------------------------------
// Timings: longest first, from earlier runs; unknown files estimated from their size

function readTimings(path: string): Record<string, number> {
  try {
    const parsed = JSON.parse(readFileSync(path, "utf8"));
    return parsed && typeof parsed.files === "object" ? parsed.files : {};
  } catch {
    return {};
  }
}

const loadTimings = () => readTimings(TIMINGS);

function saveTimings(): void {
  if (!Object.keys(timings).length) return;
  try {
    mkdirSync(join(ROOT, ".test-data"), { recursive: true });
    const merged = { ...loadTimings(), ...timings };
    for (const file of Object.keys(merged)) if (!existsSync(join(ROOT, file))) delete merged[file];
    const sorted = Object.fromEntries(Object.entries(merged).sort(([a], [b]) => a.localeCompare(b)));
    writeFileSync(
      TIMINGS,
      `${JSON.stringify({ note: "ms per test file, from the last run of test/run.ts that ran it", files: sorted }, null, 1)}\n`,
    );
  } catch (err) {
    process.stderr.write(`could not save ${TIMINGS}: ${err}\n`);
  }
}

function longestFirst(paths: string[]): string[] {
  const known = { ...readTimings(COMMITTED_TIMINGS), ...loadTimings() };
  const size = (f: string) => statSync(f).size;
  const ratios = paths
    .filter((f) => known[relative(ROOT, f)] !== undefined)
    .map((f) => known[relative(ROOT, f)]! / Math.max(1, size(f)))
    .sort((a, b) => a - b);
  const msPerByte = ratios.length ? ratios[Math.floor(ratios.length / 2)]! : 1;
  const estimate = new Map(paths.map((f) => [f, known[relative(ROOT, f)] ?? size(f) * msPerByte]));
  return [...paths].sort((a, b) => estimate.get(b)! - estimate.get(a)!);
}

// ---------------------------------------------------------------------------------------------------------
// TEST_WORKERS=1: every file in this process, in name order, like the runner always did

async function runSerial(): Promise<never> {
  const { currentOutput, onStrayError, realStdout, runAfterAll, runTestFile } = await import("./helpers/run-file.ts");
  write = realStdout;
  onStrayError((text) => stray("(between files)", text));
  let running: string | undefined;
  let done = false;
  // A test that ends the process (process.exit, a fatal error) must not look like a clean run.
  process.on("exit", (code) => {
    if (done) return;
    const output = currentOutput().trim();
    write(
      `\n✘ the test process exited (code ${code}) while ${running ?? "no file"} ran\n${output ? `  output:\n${indent(output)}\n` : ""}`,
    );
    write(`${passed} passed, ${failed + 1} failed${skipped ? `, ${skipped} skipped` : ""}\n`);
    process.exitCode = code || 1;
  });
  write(`${files.length} files in this process (TEST_WORKERS=1)\n\n`);
  for (const file of files) {
    running = relative(ROOT, file);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<FileResult>((r) => {
      timer = setTimeout(
        () =>
          r({
            file: relative(ROOT, file),
            passed: 0,
            failed: 1,
            skipped: 0,
            ms: timeoutMs,
            output: currentOutput(),
            errors: [`timed out after ${seconds(timeoutMs)} (TEST_FILE_TIMEOUT_S); it goes on in the background`],
          }),
        timeoutMs,
      );
    });
    const result = await Promise.race([runTestFile(file, ROOT), timedOut]);
    clearTimeout(timer);
    record(result);
  }
  running = "the cleanups";
  const cleanup = await runAfterAll();
  if (cleanup.output.trim()) write(`cleanups:\n${indent(cleanup.output)}\n\n`);
  for (const err of cleanup.errors) stray("cleanups", err);
  done = true;
  finish();
}

// ---------------------------------------------------------------------------------------------------------
// Parallel: a queue of files, longest first, and workers that take the next one when they are free

interface Worker {
  id: number;
  child: ChildProcess;
  file?: string;
  fileStarted: number;
  /** What the file wrote (streamed by the worker) and what reached the process's stdout/stderr directly. */
  output: string;
  raw: string;
  /** Unhandled rejections and uncaught exceptions reported while the file ran. */
  errors: string[];
  timer?: NodeJS.Timeout;
  timedOut: boolean;
  finishing: boolean;
  done: boolean;
}

async function runParallel(): Promise<never> {
  const queue = longestFirst(files);
  const live = new Set<Worker>();
  let nextId = 0;
  let interrupted = false;
  const execArgv = process.execArgv.filter((a) => !/^--(inspect|debug)/.test(a));
  write(`${files.length} files in ${workerCount} workers (TEST_WORKERS), longest first\n\n`);

  const killGroup = (w: Worker, signal: NodeJS.Signals) => {
    try {
      process.kill(-w.child.pid!, signal); // the worker and whatever it started in its group
    } catch {
      // gone already
    }
  };

  const send = (w: Worker, msg: ToWorker) => {
    if (w.child.connected) w.child.send(msg);
  };

  const next = (w: Worker) => {
    const file = interrupted ? undefined : queue.shift();
    if (!file) {
      w.finishing = true;
      w.file = undefined;
      send(w, { type: "finish" });
      // cleanups that hang must not hold the run
      w.timer = setTimeout(() => killGroup(w, "SIGKILL"), (CLEANUP_LIMIT_S + 30) * 1000);
      return;
    }
    w.file = file;
    w.fileStarted = performance.now();
    w.output = "";
    w.errors = [];
    w.timedOut = false;
    w.timer = setTimeout(() => {
      // The worker is told to stop (it runs its cleanups, then exits; its file is reported when it is gone),
      // and a new one takes the remaining files meanwhile.
      w.timedOut = true;
      w.child.kill("SIGTERM");
      w.timer = setTimeout(() => killGroup(w, "SIGKILL"), (CLEANUP_LIMIT_S + 30) * 1000);
      if (queue.length) next(spawnWorker());
    }, timeoutMs);
    send(w, { type: "run", file });
  };

  const spawnWorker = () => {
    const id = ++nextId;
    const child = fork(join(ROOT, "test", "helpers", "run-worker.ts"), [], {
      cwd: ROOT,
      execArgv,
      env: { ...process.env, TEST_WORKER_ID: String(id), TEST_ROOT: ROOT },
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      detached: true, // its own process group, so a kill reaches what it started
    });
    const w: Worker = {
      id,
      child,
      fileStarted: 0,
      output: "",
      raw: "",
      errors: [],
      timedOut: false,
      finishing: false,
      done: false,
    };
    live.add(w);
    child.stdout!.setEncoding("utf8").on("data", (s: string) => (w.raw += s));
    child.stderr!.setEncoding("utf8").on("data", (s: string) => (w.raw += s));
    child.on("message", (msg: FromWorker) => {
      if (msg.type === "output") {
        w.output += msg.text;
      } else if (msg.type === "error") {
        w.errors.push(msg.text);
      } else if (msg.type === "result") {
        // A file that ends after its time-out is reported as timed out when its worker is gone; the dying
        // worker must not be handed another file.
        if (w.timedOut || w.finishing) return;
        clearTimeout(w.timer);
        const output = w.output + (w.raw ? `\n(written to the worker's stdout/stderr)\n${w.raw}` : "");
        w.raw = "";
        record(
          { ...msg, failed: msg.failed + w.errors.length, errors: [...msg.errors, ...w.errors], output },
          `, worker ${id}`,
        );
        next(w);
      } else if (msg.type === "stray") {
        stray(`worker ${id}`, msg.text);
      } else if (msg.type === "done") {
        w.done = true;
        if (msg.output.trim() || msg.ms > 10_000)
          write(`worker ${id} cleanups (${seconds(msg.ms)})${msg.output.trim() ? `:\n${indent(msg.output)}\n` : ""}\n`);
        for (const err of msg.errors) stray(`worker ${id} cleanups`, err);
      }
    });
    child.on("error", (err) => stray(`worker ${id}`, `could not be started or signalled: ${err.stack ?? err}`));
    child.on("close", (code, signal) => {
      clearTimeout(w.timer);
      live.delete(w);
      const how = signal ? `signal ${signal}` : `code ${code}`;
      const raw = w.raw.trim();
      if (w.file) {
        const ms = performance.now() - w.fileStarted;
        const why = w.timedOut
          ? `timed out after ${seconds(timeoutMs)} (TEST_FILE_TIMEOUT_S); worker ${id} killed (${how})`
          : interrupted
            ? `interrupted; worker ${id} stopped (${how})`
            : `worker ${id} died (${how}) while running this file`;
        let output = w.output;
        if (raw) output += `\n(the worker's stdout/stderr)\n${raw}`;
        record(
          {
            file: relative(ROOT, w.file),
            passed: 0,
            failed: 1 + w.errors.length,
            skipped: 0,
            errors: [why, ...w.errors],
            output,
            ms: w.timedOut ? timeoutMs : ms,
          },
          `, worker ${id}`,
        );
        killGroup(w, "SIGKILL");
        if (queue.length && !interrupted && !w.timedOut) next(spawnWorker());
      } else if (!w.done || code !== 0) {
        stray(
          `worker ${id}`,
          `exited (${how}) ${w.done ? "after" : "before"} its cleanups finished${raw ? `\n${raw}` : ""}`,
        );
        killGroup(w, "SIGKILL");
      } else if (raw) {
        write(`worker ${id} wrote:\n${indent(raw)}\n\n`);
      }
      if (!live.size) finish(interrupted);
    });
    return w;
  };

  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      if (interrupted) {
        for (const w of live) killGroup(w, "SIGKILL");
        return;
      }
      interrupted = true;
      queue.length = 0;
      write(`\n${signal}: stopping the workers (again to kill them)\n`);
      for (const w of live) {
        w.child.kill("SIGTERM");
        setTimeout(() => killGroup(w, "SIGKILL"), 15_000).unref();
      }
    });
  }

  for (let i = 0; i < workerCount; i++) next(spawnWorker());
  return new Promise<never>(() => {});
}

await (workerCount === 1 ? runSerial() : runParallel());
