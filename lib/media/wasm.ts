// ffmpeg.wasm (@ffmpeg/core, single-threaded) for machines without native ffmpeg: the embedded default of
// docs/architecture.md "Runtime". The core runs in worker threads (ffmpeg-wasm.worker.mjs explains why), one job per worker
// at a time, jobs queued FIFO: the core is not reentrant. A worker that crashes or is aborted is thrown away and
// a new one is started for the next job, so one bad input can never poison later runs.
// Limits (ChildLimits, as the native engine's prlimit): each worker's JavaScript heap is bounded by
// resourceLimits (the inputs and outputs it holds; the core's own wasm memory is bounded by its 32-bit address
// space and its build's maximum, which no option reaches), and a run is killed after the CPU seconds, counted
// as wall time (a worker has no CPU clock of its own): the worker is terminated and replaced, the run fails.
import { Worker } from "node:worker_threads";
import { FFMPEG_PREFIX, Limiter, LineTail } from "./common.ts";
import { engineShell } from "./engine-shell.ts";
import { classifyFailure, MediaError } from "./errors.ts";
import { secureFfmpegArgs } from "./inputs.ts";
import { type ChildLimits, DEFAULT_CHILD_LIMITS } from "./native.ts";
import { createMediaPool, type MediaPool } from "./pool.ts";
import { parseFfmpegInfo, parseFfprobeJson } from "./probe.ts";
import { ProgressTracker } from "./progress.ts";
import type { EngineInput, MediaEngine } from "./types.ts";

const WORKER_URL = new URL("./ffmpeg-wasm.worker.mjs", import.meta.url);
const PROBE_OUT = "probe-out.json";

export interface WasmOptions {
  /** Parallel wasm workers. Each holds its own core (~100 MB+ while running). Default 1. */
  concurrency?: number;
  /** The process's media pool: each run takes a place there, then one of the `concurrency` workers. */
  pool?: MediaPool;
  /** Heap of each worker and time of each run (default DEFAULT_CHILD_LIMITS). */
  childLimits?: ChildLimits;
}

/** A run's time-out: the caller's, bounded by the CPU seconds of the limits (0: the caller's alone). */
function boundedTimeout(timeoutMs: number | undefined, limits: ChildLimits): number | undefined {
  const cap = limits.cpuSeconds > 0 ? limits.cpuSeconds * 1000 : undefined;
  if (cap === undefined) return timeoutMs;
  return timeoutMs && timeoutMs > 0 ? Math.min(timeoutMs, cap) : cap;
}

interface Job {
  program: "ffmpeg" | "ffprobe";
  args: string[];
  inputs: Record<string, Uint8Array>;
  outputs: string[];
  /** Written to FONTS_DIR in the core's FS. */
  fonts?: Record<string, Uint8Array>;
}

/**
 * The core's files live in its memory, so a streamed input is read whole here: its size in the main thread,
 * handed to the worker without a copy (transferred), then once more in the core's FS while the run lasts. A
 * 100 MB source costs about 200 MB at the peak; large sources belong on the native engine.
 */
async function inputBytes(
  name: string,
  input: EngineInput,
  signal: AbortSignal | undefined,
  reason: () => MediaError,
): Promise<{ bytes: Uint8Array; owned: boolean }> {
  if (input instanceof Uint8Array) return { bytes: input, owned: false };
  const bytes = new Uint8Array(input.size);
  let got = 0;
  for await (const chunk of input.chunks()) {
    if (signal?.aborted) throw reason();
    if (got + chunk.byteLength > input.size)
      throw new MediaError("failed", `streamed input ${name} gave more than the ${input.size} bytes it declared`);
    bytes.set(chunk, got);
    got += chunk.byteLength;
  }
  if (got !== input.size)
    throw new MediaError("failed", `streamed input ${name} gave ${got} bytes, declared ${input.size}`);
  return { bytes, owned: true };
}

interface JobResult {
  ret: number;
  outputs: Record<string, Uint8Array>;
  missing: string[];
}

/** One worker thread with its own ffmpeg core; runs one job at a time. */
class Slot {
  private worker: Worker | undefined;
  private ready: Promise<Worker> | undefined;
  private nextId = 1;
  busy = false;

  constructor(private readonly heapMb: number) {}

  private spawn(): Promise<Worker> {
    this.ready ??= new Promise<Worker>((resolve, reject) => {
      // A heap over the bound ends the worker with ERR_WORKER_OUT_OF_MEMORY: an 'error', then 'exit', which
      // fail the run and drop the worker (exec below); the process goes on.
      const w = new Worker(
        WORKER_URL,
        this.heapMb > 0 ? { resourceLimits: { maxOldGenerationSizeMb: this.heapMb } } : {},
      );
      const onReady = (m: any) => {
        if (m?.type !== "ready") return;
        w.off("message", onReady);
        w.off("error", onError);
        w.off("exit", onExit);
        this.worker = w;
        // Permanent listeners: an idle worker that dies must not crash the process with an unhandled 'error'.
        const forget = () => {
          if (this.worker === w) {
            this.worker = undefined;
            this.ready = undefined;
          }
        };
        w.on("error", forget);
        w.on("exit", forget);
        w.unref();
        resolve(w);
      };
      const onError = (e: Error) => {
        this.ready = undefined;
        reject(new MediaError("engine_unavailable", `ffmpeg.wasm worker failed to start: ${e.message}`, { cause: e }));
      };
      const onExit = (code: number) => {
        this.ready = undefined;
        reject(new MediaError("engine_unavailable", `ffmpeg.wasm worker exited while starting (${code})`));
      };
      w.on("message", onReady);
      w.once("error", onError);
      w.once("exit", onExit);
    });
    return this.ready;
  }

  warmup(): Promise<unknown> {
    return this.spawn();
  }

  /** Drop the worker; the next job starts a fresh one. */
  async kill(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    this.ready = undefined;
    if (w) await w.terminate().catch(() => {});
  }

  async exec(
    job: Job,
    onLine: (line: string) => void,
    signal: AbortSignal | undefined,
    reason: () => MediaError,
    transfer?: ArrayBuffer[],
  ): Promise<JobResult> {
    const w = await this.spawn();
    if (signal?.aborted) throw reason();
    const id = this.nextId++;
    w.ref(); // keep the process alive while a job runs
    try {
      return await new Promise<JobResult>((resolve, reject) => {
        const cleanup = () => {
          w.off("message", onMessage);
          w.off("error", onError);
          w.off("exit", onExit);
          signal?.removeEventListener("abort", onAbort);
        };
        const onMessage = (m: any) => {
          if (m?.id !== id) return;
          if (m.type === "log") return onLine(String(m.line));
          cleanup();
          if (m.type === "done") resolve({ ret: m.ret, outputs: m.outputs, missing: m.missing });
          else {
            // The core threw (out of memory, wasm trap): its state cannot be trusted any more.
            void this.kill();
            reject(new MediaError("failed", `ffmpeg.wasm crashed: ${m.message}`));
          }
        };
        const onError = (e: Error) => {
          cleanup();
          void this.kill();
          reject(new MediaError("failed", `ffmpeg.wasm worker error: ${e.message}`, { cause: e }));
        };
        const onExit = (code: number) => {
          cleanup();
          this.worker = undefined;
          this.ready = undefined;
          reject(new MediaError("failed", `ffmpeg.wasm worker exited (${code})`));
        };
        const onAbort = () => {
          cleanup();
          // exec() inside the worker is synchronous: terminating the thread is the only way to stop it.
          void this.kill();
          reject(reason());
        };
        w.on("message", onMessage);
        w.once("error", onError);
        w.once("exit", onExit);
        signal?.addEventListener("abort", onAbort, { once: true });
        // Inputs are copied (not transferred) so the caller's buffers stay usable; buffers the engine made
        // itself (streamed inputs read whole) are transferred.
        w.postMessage({ id, ...job }, transfer ?? []);
      });
    } finally {
      this.worker?.unref();
    }
  }
}

export function createWasmEngine(options: WasmOptions = {}): MediaEngine {
  // Workers are capped apart from the pool: each holds 100 MB+ while it runs, so a pool sized to the cores
  // does not mean as many workers. A run takes a pool place first (CPU), then a worker (memory); holders of
  // workers never wait for a place, so the two cannot deadlock.
  const size = Math.max(1, options.concurrency ?? 1);
  const pool = options.pool ?? createMediaPool(size);
  const workers = new Limiter(size);
  const limits = options.childLimits ?? DEFAULT_CHILD_LIMITS;
  const slots = Array.from({ length: size }, () => new Slot(limits.memoryMb));

  async function onSlot<T>(
    fn: (slot: Slot) => Promise<T>,
    signal: AbortSignal | undefined,
    reason: () => MediaError,
  ): Promise<T> {
    return pool.run(
      () =>
        workers.run(
          async () => {
            // The worker limiter guarantees a free slot exists.
            const slot = slots.find((s) => !s.busy)!;
            slot.busy = true;
            try {
              return await fn(slot);
            } finally {
              slot.busy = false;
            }
          },
          signal,
          reason,
        ),
      signal,
      reason,
    );
  }

  return engineShell<Slot>({
    kind: "wasm",
    pool,
    timeoutMs: (asked) => boundedTimeout(asked, limits),
    reservedNames: [PROBE_OUT],
    inPlace: (fn, s) => onSlot(fn, s.signal, s.reason),

    async ffmpeg(slot, args, io, s, runArgs) {
      const inputs: Record<string, Uint8Array> = {};
      const transfer: ArrayBuffer[] = [];
      for (const [name, input] of Object.entries(io.inputs ?? {})) {
        const { bytes, owned } = await inputBytes(name, input, s.signal, s.reason);
        inputs[name] = bytes;
        if (owned) transfer.push(bytes.buffer as ArrayBuffer);
      }
      if (s.signal?.aborted) throw s.reason();
      const tail = new LineTail();
      const progress = new ProgressTracker(args, io.onProgress, io.durationSeconds);
      const res = await slot.exec(
        { program: "ffmpeg", args: [...FFMPEG_PREFIX, ...runArgs], inputs, outputs: io.outputs, fonts: io.fonts },
        (line) => {
          io.onLog?.(line);
          if (!/^[a-z_0-9]+=/.test(line)) tail.push(line); // progress key=value lines are not worth keeping
          progress.line(line);
        },
        s.signal,
        s.reason,
        transfer,
      );
      if (res.ret !== 0)
        throw new MediaError(classifyFailure(tail.lines), `ffmpeg.wasm failed (exit code ${res.ret})`, {
          log: tail.lines,
        });
      if (res.missing.length)
        throw new MediaError("failed", `ffmpeg.wasm produced no ${res.missing.join(", ")}`, { log: tail.lines });
      progress.done();
      return res.outputs;
    },

    async ffprobe(slot, args, name, data, s) {
      const { bytes: file, owned } = await inputBytes(name, data, s.signal, s.reason);
      if (s.signal?.aborted) throw s.reason();
      const tail = new LineTail();
      // ffprobe's -o writes the JSON to a file: its stdout would arrive line by line through the logger.
      const res = await slot.exec(
        { program: "ffprobe", args: [...args, "-o", PROBE_OUT], inputs: { [name]: file }, outputs: [PROBE_OUT] },
        (line) => tail.push(line),
        s.signal,
        s.reason,
        // The fallback below needs the bytes again: a stream's copy is transferred only when nothing follows.
        undefined,
      );
      const json = res.outputs[PROBE_OUT];
      if (json) {
        const text = new TextDecoder().decode(json);
        if (/"format"\s*:/.test(text)) return parseFfprobeJson(text, file.byteLength);
      }
      if (tail.lines.length) {
        const kind = classifyFailure(tail.lines);
        throw new MediaError(kind === "failed" ? "invalid_input" : kind, "ffprobe (wasm) found no format", {
          log: tail.lines,
        });
      }
      // A core built without ffprobe: read what `ffmpeg -i` prints instead.
      const info: string[] = [];
      await slot.exec(
        {
          program: "ffmpeg",
          args: ["-hide_banner", ...secureFfmpegArgs(["-i", name], { [name]: file })],
          inputs: { [name]: file },
          outputs: [],
        },
        (l) => info.push(l),
        s.signal,
        s.reason,
        owned ? [file.buffer as ArrayBuffer] : undefined,
      );
      return parseFfmpegInfo(info, file.byteLength);
    },

    async warmup() {
      await Promise.all(slots.map((s) => s.warmup()));
    },

    async kill() {
      await Promise.all(slots.map((s) => s.kill()));
    },
  });
}
