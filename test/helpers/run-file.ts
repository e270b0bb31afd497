// Runs one test file with uvu's deferred queue, the way test/run.ts always has (set UVU_INDEX, push the
// file's name, import it, then run the suites it queued), and collects its result instead of letting uvu
// print: passed/failed/skipped counts, uvu's failure text, and whatever the file itself wrote to stdout or
// stderr. Used by the serial runner (TEST_WORKERS=1, in test/run.ts's own process) and by each worker of
// the parallel runner (test/helpers/run-worker.ts). Importing this module sets up uvu's globals, so it must
// be imported before any test file (and before uvu itself).
import { relative } from "node:path";
import process from "node:process";
import { pathToFileURL } from "node:url";
import { inspect } from "node:util";

(globalThis as any).UVU_DEFER = 1;
(globalThis as any).UVU_QUEUE ??= [];

export interface FileResult {
  /** Relative to the repository root, e.g. `test/core/ledger.test.ts`. */
  file: string;
  passed: number;
  failed: number;
  skipped: number;
  /** uvu's failure texts, import errors, unhandled rejections, timeouts. */
  errors: string[];
  /** What the file wrote to stdout/stderr (uvu's own progress marks left out). */
  output: string;
  ms: number;
}

interface Current {
  result: FileResult;
  /** The file this process started before this one. */
  previous?: string;
}

let current: Current | undefined;
let lastStarted: string | undefined;
let strayHandler: (text: string) => void = (text) => realStderr(`${text}\n`);
let outputHandler: ((text: string) => void) | undefined;
let errorHandler: ((text: string) => void) | undefined;

const stdoutWrite = process.stdout.write.bind(process.stdout);
const stderrWrite = process.stderr.write.bind(process.stderr);

/** Writes to the real stdout, past the capture. */
export function realStdout(text: string): void {
  stdoutWrite(text);
}
/** Writes to the real stderr, past the capture. */
export function realStderr(text: string): void {
  stderrWrite(text);
}

/** Where an error that happens outside any file (between files, during cleanups) is reported. */
export function onStrayError(fn: (text: string) => void): void {
  strayHandler = fn;
}

/**
 * Where a running file's output goes as it is written (the worker streams it to the coordinator, so a
 * crash does not lose it); without a handler it is kept in the file's result.
 */
export function onFileOutput(fn: (text: string) => void): void {
  outputHandler = fn;
}

/**
 * Where an unhandled rejection or uncaught exception during a file goes as it happens (the worker sends it
 * on at once, so it survives a timeout or crash that follows); the receiver counts it as one failure of the
 * file. Without a handler it is kept in the file's result.
 */
export function onFileError(fn: (text: string) => void): void {
  errorHandler = fn;
}

// uvu writes its progress (suite label, one mark per test, "(n / m)") through `x => process.stdout.write(x)`
// in its dist file; the runner prints its own summary instead, so those writes are dropped. Everything else
// (console.log in a test, warnings) is kept with the file that wrote it.
function writtenByUvu(): boolean {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 4;
  const stack = new Error().stack ?? "";
  Error.stackTraceLimit = limit;
  // [0] "Error", [1] this function, [2] the patched write, [3] its caller
  const caller = stack.split("\n")[3] ?? "";
  return /[\\/]uvu[\\/]dist[\\/]/.test(caller);
}

function capture(original: (chunk: any, ...rest: any[]) => boolean) {
  return function (this: unknown, chunk: any, ...rest: any[]): boolean {
    if (!current) return original(chunk, ...rest);
    if (writtenByUvu()) return true;
    const text = typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
    if (outputHandler) outputHandler(text);
    else current.result.output += text;
    const cb = rest.find((r) => typeof r === "function");
    if (cb) process.nextTick(cb);
    return true;
  };
}
process.stdout.write = capture(stdoutWrite) as typeof process.stdout.write;
process.stderr.write = capture(stderrWrite) as typeof process.stderr.write;

function describe(err: unknown): string {
  return err instanceof Error ? (err.stack ?? String(err)) : inspect(err, { depth: 4 });
}

function reportError(kind: string, err: unknown): void {
  const where = current
    ? current.previous
      ? ` (while ${current.result.file} ran; it may come from an earlier file in this process, the one before was ${current.previous})`
      : ` (while ${current.result.file} ran)`
    : lastStarted
      ? ` (after ${lastStarted}, between files)`
      : "";
  const text = `${kind}${where}:\n${describe(err)}`;
  if (current && errorHandler && current.result.file !== "(cleanups)") {
    errorHandler(text);
  } else if (current) {
    current.result.failed++;
    current.result.errors.push(text);
  } else {
    strayHandler(text);
  }
}

// A rejection nobody handles or an exception nobody catches fails the file that is running (or is reported
// on its own between files); the process goes on with the next file instead of dying without a word.
process.on("unhandledRejection", (reason) => reportError("Unhandled rejection", reason));
process.on("uncaughtException", (err) => reportError("Uncaught exception", err));

/** What the running file wrote so far (kept only when no onFileOutput handler streams it). */
export function currentOutput(): string {
  return current?.result.output ?? "";
}

/** `file` is absolute; `root` is the repository root the reported names are relative to. */
export async function runTestFile(file: string, root: string): Promise<FileResult> {
  const name = relative(root, file);
  const result: FileResult = { file: name, passed: 0, failed: 0, skipped: 0, errors: [], output: "", ms: 0 };
  const queue = (globalThis as any).UVU_QUEUE as any[][];
  const index = queue.length;
  (globalThis as any).UVU_INDEX = index;
  queue.push([name]);
  current = { result, previous: lastStarted };
  lastStarted = name;
  const started = performance.now();
  try {
    try {
      await import(pathToFileURL(file).href);
    } catch (err) {
      result.failed++;
      result.errors.push(`Could not import ${name}:\n${describe(err)}`);
      return result;
    }
    const group = queue[index]!;
    group.shift(); // the name
    for (const runSuite of group) {
      const [errs, ran, skips, total] = await runSuite();
      result.passed += ran;
      result.skipped += skips;
      result.failed += total - ran; // uvu's total counts the tests it ran (skips are not among them)
      if (typeof errs === "string" && errs.length) result.errors.push(errs.replace(/\n+$/, ""));
    }
    return result;
  } finally {
    queue[index] = []; // let the file's suites and their state be collected
    result.ms = performance.now() - started;
    if (current?.result === result) current = undefined; // not when a timed-out file ends late
  }
}

/**
 * Runs the lifecycle cleanups (isolated databases, ...) of this process. Returns what they wrote, and the
 * unhandled rejections / uncaught exceptions that happened meanwhile (each one a failure for the caller).
 */
export async function runAfterAll(): Promise<{ output: string; errors: string[] }> {
  const cleanups: Current = {
    result: { file: "(cleanups)", passed: 0, failed: 0, skipped: 0, errors: [], output: "", ms: 0 },
  };
  current = cleanups;
  const handler = outputHandler;
  outputHandler = undefined;
  try {
    const { afterAll } = await import("./lifecycle.ts");
    await afterAll();
  } catch (err) {
    cleanups.result.errors.push(`The cleanups failed:\n${describe(err)}`);
  } finally {
    if (current === cleanups) current = undefined;
    outputHandler = handler;
  }
  return { output: cleanups.result.output, errors: cleanups.result.errors };
}
