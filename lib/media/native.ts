// Native ffmpeg/ffprobe as child processes: 5-20x faster than the wasm core and multi-threaded, so production
// uses it whenever it is on PATH. Each run gets a private temp dir as its cwd, which is what makes bare file
// names in the arguments mean the same thing here as in the wasm core's in-memory FS. Inputs are opened as
// lib/media/inputs.ts decides (sniffed demuxer, whitelists), and the child sees a minimal environment
// (lib/child-env.ts): none of the server's secrets. Each child runs under prlimit (util-linux) with a cap on its
// address space and its CPU time (ChildLimits), so one input the budgets missed cannot take the machine: a
// child over either is killed by the kernel and its run fails like any other (a job fails and is refunded).
import { spawn } from "node:child_process";
import { accessSync, constants, createWriteStream } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import process from "node:process";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { childEnv } from "../child-env.ts";
import { FFMPEG_PREFIX, LineSplitter, LineTail } from "./common.ts";
import { engineShell } from "./engine-shell.ts";
import { classifyFailure, MediaError } from "./errors.ts";
import { createMediaPool, type MediaPool } from "./pool.ts";
import { parseFfprobeJson } from "./probe.ts";
import { ProgressTracker } from "./progress.ts";
import { type EngineInput, FONTS_DIR, type MediaEngine } from "./types.ts";

/** Find an executable on PATH (no shell, no `which`). */
export function findOnPath(name: string, pathEnv = process.env.PATH ?? ""): string | undefined {
  for (const dir of pathEnv.split(delimiter)) {
    if (!dir) continue;
    const full = join(dir, name);
    try {
      accessSync(full, constants.X_OK);
      return full;
    } catch {
      // not here
    }
  }
  return undefined;
}

/**
 * Write one input to the run's temp dir. A streamed input goes to disk chunk by chunk (backpressure through
 * pipeline), so its whole size is never in memory; it must give exactly the bytes it declared.
 */
async function writeInput(
  path: string,
  name: string,
  input: EngineInput,
  signal: AbortSignal | undefined,
): Promise<void> {
  if (input instanceof Uint8Array) return writeFile(path, input);
  let written = 0;
  const counted = async function* () {
    for await (const chunk of input.chunks()) {
      written += chunk.byteLength;
      if (written > input.size) break;
      yield chunk;
    }
  };
  try {
    await pipeline(Readable.from(counted(), { objectMode: false }), createWriteStream(path, { flags: "wx" }), {
      signal,
    });
  } catch (e) {
    if (signal?.aborted) return; // the caller reports the abort
    throw new MediaError("failed", `cannot write input ${name}: ${e instanceof Error ? e.message : String(e)}`, {
      cause: e,
    });
  }
  if (written > input.size)
    throw new MediaError("failed", `streamed input ${name} gave more than the ${input.size} bytes it declared`);
  if (written < input.size)
    throw new MediaError("failed", `streamed input ${name} gave ${written} bytes, declared ${input.size}`);
}

/** Caps on every ffmpeg/ffprobe child (MEDIA_CHILD_MEMORY_MB, MEDIA_CHILD_CPU_SECONDS); 0 turns one off. */
export interface ChildLimits {
  /** Address space in MB (prlimit --as): virtual memory, so it sits above what a run really holds. */
  memoryMb: number;
  /** CPU seconds over all of the child's threads (prlimit --cpu): SIGXCPU, then SIGKILL, when spent. */
  cpuSeconds: number;
}

/** The defaults: 4 GB of address space (a 4k render holds 1-2 GB) and an hour of CPU (a long caption burn). */
export const DEFAULT_CHILD_LIMITS: ChildLimits = { memoryMb: 4096, cpuSeconds: 3600 };

let warnedNoPrlimit = false;

/**
 * The program and arguments that run `program` under `limits`: prlimit in front when it is on PATH, else the
 * program as it is, with a warning once per process (the limits cannot be kept without it).
 */
export function limitedCommand(
  program: string,
  args: string[],
  limits: ChildLimits,
  prlimitPath: string | undefined,
  warn: (message: string) => void = console.warn,
): [string, string[]] {
  const caps = [
    ...(limits.memoryMb > 0 ? [`--as=${limits.memoryMb * 1024 * 1024}`] : []),
    ...(limits.cpuSeconds > 0 ? [`--cpu=${limits.cpuSeconds}`] : []),
  ];
  if (caps.length === 0) return [program, args];
  if (!prlimitPath) {
    if (!warnedNoPrlimit) {
      warnedNoPrlimit = true;
      warn(
        "media: prlimit (util-linux) is not on PATH; ffmpeg and ffprobe run without MEDIA_CHILD_MEMORY_MB and MEDIA_CHILD_CPU_SECONDS",
      );
    }
    return [program, args];
  }
  return [prlimitPath, [...caps, "--", program, ...args]];
}

export interface NativeOptions {
  ffmpegPath: string;
  ffprobePath: string;
  tmpDir?: string;
  /** Parallel ffmpeg processes (each is multi-threaded itself). Default: half the cores, at least 1. */
  concurrency?: number;
  /** The process's media pool: runs take a place in it instead (`concurrency` is then unused). */
  pool?: MediaPool;
  /** Caps on each child (default DEFAULT_CHILD_LIMITS). */
  childLimits?: ChildLimits;
  /** prlimit's path (default: looked up on PATH; null: run without it). */
  prlimitPath?: string | null;
}

interface ProcResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Uint8Array;
}

/** ffmpeg before 4.4 has no -stats_period (Ubuntu 20.04 ships 4.2); those builds just get progress less often. */
export function supportsStatsPeriod(versionLine: string): boolean {
  const m = /version n?(\d+)\.(\d+)/.exec(versionLine);
  if (!m) return true; // git builds ("N-12345-g...") are recent
  const major = Number(m[1]);
  return major > 4 || (major === 4 && Number(m[2]) >= 4);
}

export function createNativeEngine(options: NativeOptions): MediaEngine {
  const pool =
    options.pool ?? createMediaPool(options.concurrency ?? Math.max(1, Math.floor(availableParallelism() / 2)));
  const limiter = pool;
  const children = new Set<ReturnType<typeof spawn>>();
  const limits = options.childLimits ?? DEFAULT_CHILD_LIMITS;
  const prlimitPath = options.prlimitPath === null ? undefined : (options.prlimitPath ?? findOnPath("prlimit"));
  let prefix: Promise<string[]> | undefined;

  /** The run prefix, adapted once to this ffmpeg's version. */
  function runPrefix(): Promise<string[]> {
    prefix ??= new Promise<string[]>((resolve) => {
      const child = spawn(options.ffmpegPath, ["-hide_banner", "-version"], {
        stdio: ["ignore", "pipe", "ignore"],
        env: childEnv(),
      });
      let out = "";
      child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
      child.on("error", () => resolve(FFMPEG_PREFIX));
      child.on("close", () => {
        if (supportsStatsPeriod(out.split("\n")[0] ?? "")) return resolve(FFMPEG_PREFIX);
        const i = FFMPEG_PREFIX.indexOf("-stats_period");
        resolve([...FFMPEG_PREFIX.slice(0, i), ...FFMPEG_PREFIX.slice(i + 2)]);
      });
    });
    return prefix;
  }

  function exec(
    program: string,
    args: string[],
    cwd: string,
    onStdoutLine: ((l: string) => void) | undefined,
    onStderrLine: (l: string) => void,
    signal: AbortSignal | undefined,
  ): Promise<ProcResult> {
    return new Promise((resolve, reject) => {
      const [file, argv] = limitedCommand(program, args, limits, prlimitPath);
      const child = spawn(file, argv, {
        cwd,
        env: childEnv({ dir: cwd }),
        stdio: ["ignore", "pipe", "pipe"],
        windowsHide: true,
      });
      children.add(child);
      const chunks: Buffer[] = [];
      const out = onStdoutLine ? new LineSplitter(onStdoutLine) : undefined;
      const err = new LineSplitter(onStderrLine);
      child.stdout!.on("data", (c: Buffer) => (out ? out.write(c) : chunks.push(c)));
      child.stderr!.on("data", (c: Buffer) => err.write(c));
      const kill = () => child.kill("SIGKILL");
      signal?.addEventListener("abort", kill, { once: true });
      child.on("error", (e) => {
        signal?.removeEventListener("abort", kill);
        children.delete(child);
        reject(new MediaError("engine_unavailable", `cannot start ${program}: ${e.message}`, { cause: e }));
      });
      child.on("close", (code, sig) => {
        signal?.removeEventListener("abort", kill);
        children.delete(child);
        out?.end();
        err.end();
        resolve({ code, signal: sig, stdout: Buffer.concat(chunks) });
      });
    });
  }

  async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
    const dir = await mkdtemp(join(options.tmpDir ?? tmpdir(), "mediagate-ff-"));
    try {
      return await fn(dir);
    } finally {
      await rm(dir, { recursive: true, force: true }).catch(() => {});
    }
  }

  return engineShell<string>({
    kind: "native",
    pool,
    timeoutMs: (asked) => asked,
    inPlace: (fn, s) => limiter.run(() => withTempDir(fn), s.signal, s.reason),

    async ffmpeg(dir, args, io, s, runArgs) {
      await Promise.all(
        Object.entries(io.inputs ?? {}).map(([name, input]) => writeInput(join(dir, name), name, input, s.signal)),
      );
      if (io.fonts) {
        await mkdir(join(dir, FONTS_DIR));
        await Promise.all(
          Object.entries(io.fonts).map(([name, bytes]) => writeFile(join(dir, FONTS_DIR, name), bytes)),
        );
      }
      const tail = new LineTail();
      const progress = new ProgressTracker(args, io.onProgress, io.durationSeconds);
      const onLine = (l: string) => {
        io.onLog?.(l);
        progress.line(l);
      };
      if (s.signal?.aborted) throw s.reason();
      const res = await exec(
        options.ffmpegPath,
        [...(await runPrefix()), ...runArgs],
        dir,
        onLine,
        (l) => {
          tail.push(l);
          onLine(l);
        },
        s.signal,
      );
      if (s.signal?.aborted) throw s.reason();
      if (res.code !== 0) {
        const why = res.signal
          ? `killed by ${res.signal}${res.signal === "SIGXCPU" || res.signal === "SIGKILL" ? " (MEDIA_CHILD_CPU_SECONDS?)" : res.signal === "SIGSEGV" || res.signal === "SIGABRT" ? " (MEDIA_CHILD_MEMORY_MB?)" : ""}`
          : `exit code ${res.code}`;
        throw new MediaError(classifyFailure(tail.lines), `ffmpeg failed (${why})`, { log: tail.lines });
      }
      const outputs: Record<string, Uint8Array> = {};
      for (const name of io.outputs) {
        try {
          outputs[name] = new Uint8Array(await readFile(join(dir, name)));
        } catch {
          throw new MediaError("failed", `ffmpeg produced no ${name}`, { log: tail.lines });
        }
      }
      progress.done();
      return outputs;
    },

    async ffprobe(dir, args, name, data, s) {
      await writeInput(join(dir, name), name, data, s.signal);
      if (s.signal?.aborted) throw s.reason();
      const tail = new LineTail();
      const res = await exec(options.ffprobePath, args, dir, undefined, (l) => tail.push(l), s.signal);
      if (s.signal?.aborted) throw s.reason();
      if (res.code !== 0) {
        const kind = classifyFailure(tail.lines);
        throw new MediaError(kind === "failed" ? "invalid_input" : kind, `ffprobe failed (exit code ${res.code})`, {
          log: tail.lines,
        });
      }
      return parseFfprobeJson(
        new TextDecoder().decode(res.stdout),
        data instanceof Uint8Array ? data.byteLength : data.size,
      );
    },

    async warmup() {
      await runPrefix();
    },

    async kill() {
      for (const c of children) c.kill("SIGKILL");
    },
  });
}
