// Pieces both engines share, so that validation, defaults and failure handling cannot drift apart.
import { MediaError } from "./errors.ts";
import { probeInputOptions, secureFfmpegArgs } from "./inputs.ts";
import { FILE_NAME, type RunIO } from "./types.ts";

/**
 * Put in front of every ffmpeg run on both engines. `-loglevel info` is explicit because the wasm core keeps
 * global state across runs in one instance; `-progress pipe:1` + `-stats_period` give both engines the same
 * machine-readable progress lines; `-nostats` keeps the carriage-return stats line out of the error tail.
 */
export const FFMPEG_PREFIX = ["-nostdin", "-y", "-hide_banner", "-loglevel", "info", "-nostats", "-progress", "pipe:1", "-stats_period", "0.25"];

/** ffprobe on one file, opened as lib/media/inputs.ts decides (its sniffed demuxer and the whitelists). */
export const FFPROBE_ARGS = (name: string, bytes: Uint8Array) => ["-v", "error", ...probeInputOptions(name, bytes), "-print_format", "json", "-show_format", "-show_streams", name];

/** How many stderr lines a MediaError keeps. */
export const LOG_TAIL = 20;

export function validateIO(args: readonly string[], io: RunIO): void {
  if (!Array.isArray(args) || args.some((a) => typeof a !== "string")) throw new MediaError("failed", "args must be an array of strings");
  const inputs = Object.keys(io.inputs ?? {});
  for (const name of [...inputs, ...io.outputs]) {
    if (!FILE_NAME.test(name)) throw new MediaError("failed", `bad file name ${JSON.stringify(name)}`);
  }
  for (const out of io.outputs) if (inputs.includes(out)) throw new MediaError("failed", `output ${out} is also an input`);
  for (const [name, bytes] of Object.entries(io.inputs ?? {})) {
    if (!(bytes instanceof Uint8Array)) throw new MediaError("failed", `input ${name} is not a Uint8Array`);
  }
}

/** Checks a run and answers its arguments as they are run: every input opened as lib/media/inputs.ts decides. */
export function prepareRun(args: readonly string[], io: RunIO): string[] {
  validateIO(args, io);
  return secureFfmpegArgs(args, io.inputs ?? {});
}

/** Combine the caller's signal and timeout into one signal plus the reason to report. */
export function runSignal(io: { signal?: AbortSignal; timeoutMs?: number }): { signal: AbortSignal | undefined; reason(): MediaError; dispose(): void } {
  const ctl = new AbortController();
  let why: MediaError | undefined;
  const onAbort = () => {
    why ??= new MediaError("aborted", "aborted by caller");
    ctl.abort();
  };
  if (io.signal?.aborted) onAbort();
  io.signal?.addEventListener("abort", onAbort, { once: true });
  const timer = io.timeoutMs && io.timeoutMs > 0
    ? setTimeout(() => {
        why ??= new MediaError("timeout", `timed out after ${io.timeoutMs} ms`);
        ctl.abort();
      }, io.timeoutMs)
    : undefined;
  timer?.unref?.();
  return {
    signal: io.signal || timer ? ctl.signal : undefined,
    reason: () => why ?? new MediaError("aborted", "aborted"),
    dispose() {
      if (timer) clearTimeout(timer);
      io.signal?.removeEventListener("abort", onAbort);
    },
  };
}

/** A FIFO semaphore: the wasm core is not reentrant, and native runs are capped so a burst cannot fork-bomb us. */
export class Limiter {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  constructor(private readonly max: number) {}

  get pending(): number {
    return this.active + this.waiting.length;
  }

  async run<T>(fn: () => Promise<T>, signal?: AbortSignal, reason?: () => Error): Promise<T> {
    if (this.active >= this.max) {
      // The slot is handed over by the finishing run (active is not decremented in between), so a caller
      // arriving at that moment cannot slip past the queue.
      await new Promise<void>((resolve, reject) => {
        const go = () => {
          signal?.removeEventListener("abort", cancel);
          resolve();
        };
        const cancel = () => {
          const i = this.waiting.indexOf(go);
          if (i >= 0) this.waiting.splice(i, 1);
          reject(reason?.() ?? new MediaError("aborted", "aborted while queued"));
        };
        if (signal?.aborted) return cancel();
        signal?.addEventListener("abort", cancel, { once: true });
        this.waiting.push(go);
      });
    } else {
      this.active++;
    }
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}

/** Keeps the last N lines of a stream. */
export class LineTail {
  readonly lines: string[] = [];
  constructor(private readonly max = LOG_TAIL) {}
  push(line: string): void {
    this.lines.push(line);
    if (this.lines.length > this.max) this.lines.shift();
  }
}

/** Splits a byte stream into lines (on \n and \r). */
export class LineSplitter {
  private rest = "";
  private readonly decoder = new TextDecoder();
  constructor(private readonly onLine: (line: string) => void) {}
  write(chunk: Uint8Array): void {
    const text = this.rest + this.decoder.decode(chunk, { stream: true });
    const parts = text.split(/\r\n|\n|\r/);
    this.rest = parts.pop() ?? "";
    for (const p of parts) if (p) this.onLine(p);
  }
  end(): void {
    if (this.rest) this.onLine(this.rest);
    this.rest = "";
  }
}
