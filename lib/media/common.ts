// Pieces both engines share, so that validation, defaults and failure handling cannot drift apart.
import { MediaError } from "./errors.ts";
import { probeInputOptions, secureFfmpegArgs } from "./inputs.ts";
import { FILE_NAME, FONTS_DIR, type RunIO, type StreamedInput } from "./types.ts";

/**
 * Put in front of every ffmpeg run on both engines. `-loglevel info` is explicit because the wasm core keeps
 * global state across runs in one instance; `-progress pipe:1` + `-stats_period` give both engines the same
 * machine-readable progress lines; `-nostats` keeps the carriage-return stats line out of the error tail.
 */
export const FFMPEG_PREFIX = [
  "-nostdin",
  "-y",
  "-hide_banner",
  "-loglevel",
  "info",
  "-nostats",
  "-progress",
  "pipe:1",
  "-stats_period",
  "0.25",
];

/** ffprobe on one file, opened as lib/media/inputs.ts decides (its sniffed demuxer and the whitelists). */
export const FFPROBE_ARGS = (name: string, bytes: Uint8Array) => [
  "-v",
  "error",
  ...probeInputOptions(name, bytes),
  "-print_format",
  "json",
  "-show_format",
  "-show_streams",
  name,
];

/** How many stderr lines a MediaError keeps. */
export const LOG_TAIL = 20;

export function isStreamedInput(value: unknown): value is StreamedInput {
  const v = value as StreamedInput | null;
  return (
    typeof v === "object" &&
    v !== null &&
    !(v instanceof Uint8Array) &&
    typeof v.chunks === "function" &&
    Number.isSafeInteger(v.size) &&
    v.size >= 0
  );
}

export function validateIO(args: readonly string[], io: RunIO): void {
  if (!Array.isArray(args) || args.some((a) => typeof a !== "string"))
    throw new MediaError("failed", "args must be an array of strings");
  const inputs = Object.keys(io.inputs ?? {});
  const fonts = Object.keys(io.fonts ?? {});
  for (const name of [...inputs, ...io.outputs, ...fonts]) {
    if (!FILE_NAME.test(name)) throw new MediaError("failed", `bad file name ${JSON.stringify(name)}`);
  }
  for (const name of [...inputs, ...io.outputs])
    if (name === FONTS_DIR) throw new MediaError("failed", `${name} is the fonts directory`);
  for (const out of io.outputs)
    if (inputs.includes(out)) throw new MediaError("failed", `output ${out} is also an input`);
  for (const [name, input] of Object.entries(io.inputs ?? {})) {
    if (!(input instanceof Uint8Array) && !isStreamedInput(input))
      throw new MediaError("failed", `input ${name} is neither a Uint8Array nor a streamed input`);
  }
  for (const [name, bytes] of Object.entries(io.fonts ?? {})) {
    if (!(bytes instanceof Uint8Array)) throw new MediaError("failed", `font ${name} is not a Uint8Array`);
  }
}

/** How much of a streamed input is read to decide its demuxer (a signature; an ID3v2 tag before an MP3 frame). */
export const STREAM_HEAD_BYTES = 256 * 1024;

/** The first `max` bytes of a streamed input (the iteration is ended early, so the rest is never read). */
export async function readHead(input: StreamedInput, max = STREAM_HEAD_BYTES): Promise<Uint8Array> {
  const want = Math.min(max, input.size);
  const head = new Uint8Array(want);
  let got = 0;
  if (want === 0) return head;
  for await (const chunk of input.chunks()) {
    const take = Math.min(chunk.byteLength, want - got);
    head.set(chunk.subarray(0, take), got);
    got += take;
    if (got >= want) break;
  }
  return head.subarray(0, got);
}

/**
 * The libass filter, the one filter that opens files by name we run: `subtitles=filename=<name>:fontsdir=fonts`,
 * where <name> is an input of the run holding an ASS script (it starts with "[Script Info]", so the subtitles
 * filter's own format probe can only pick the ASS demuxer) and `fonts` is RunIO.fonts' directory. Built by
 * libassFilter(); any other form stays refused by lib/media/inputs.ts.
 */
const LIBASS_FILTER = /(^|[\s,;\]])subtitles=filename=([A-Za-z0-9_][A-Za-z0-9._-]{0,127}):fontsdir=fonts(?=$|[\s,;[])/g;
const ASS_SIGNATURE = /^(\uFEFF)?\[Script Info\]/;

/** The filter that draws the ASS script `file` (an input of the run) with the run's fonts (RunIO.fonts). */
export function libassFilter(file: string): string {
  if (!FILE_NAME.test(file)) throw new MediaError("failed", `bad file name ${JSON.stringify(file)}`);
  return `subtitles=filename=${file}:fontsdir=${FONTS_DIR}`;
}

const FILTER_VALUE_OPTIONS = new Set(["-vf", "-filter:v", "-filter", "-filter_complex", "-lavfi"]);

/**
 * Checks a run and answers its arguments as they are run: every input opened as lib/media/inputs.ts decides
 * (a streamed input by its first bytes), the libass filter allowed only in the form above. Synchronous when
 * every input is bytes, so a run is queued (MediaEngine.pending) as soon as it is called.
 */
export function prepareRun(args: readonly string[], io: RunIO): string[] | Promise<string[]> {
  validateIO(args, io);
  const entries = Object.entries(io.inputs ?? {});
  if (entries.every(([, input]) => input instanceof Uint8Array))
    return secureRun(args, io, (io.inputs as Record<string, Uint8Array> | undefined) ?? {});
  // A concat list is read whole by the rules of inputs.ts; the lists we write are small bytes, never streams.
  let group = 0;
  for (let k = 0; k < args.length - 1; k++) {
    if (args[k] !== "-i") continue;
    const options = args.slice(group, k);
    const f = options.lastIndexOf("-f");
    if (f >= 0 && options[f + 1] === "concat" && isStreamedInput(io.inputs?.[args[k + 1]!]))
      throw new MediaError("failed", `concat list ${args[k + 1]} must be bytes, not a stream`);
    group = k + 2;
  }
  return (async () => {
    const sniffable: Record<string, Uint8Array> = {};
    for (const [name, input] of entries) sniffable[name] = input instanceof Uint8Array ? input : await readHead(input);
    return secureRun(args, io, sniffable);
  })();
}

function secureRun(args: readonly string[], io: RunIO, sniffable: Readonly<Record<string, Uint8Array>>): string[] {
  // Each well-formed libass filter is swapped for a placeholder while inputs.ts checks the graph, then put back.
  const nonce = `mgass${Math.random().toString(36).slice(2, 10)}`;
  const held: string[] = [];
  const checked = args.map((a, k) => {
    if (k === 0 || !FILTER_VALUE_OPTIONS.has(args[k - 1]!)) return a;
    return a.replace(LIBASS_FILTER, (_m, lead: string, file: string) => {
      const script = io.inputs?.[file];
      if (!(script instanceof Uint8Array) || !ASS_SIGNATURE.test(new TextDecoder().decode(script.subarray(0, 64)))) {
        throw new MediaError("failed", `subtitles filter file ${file} is not an ASS script of this run`);
      }
      if (args.some((x, i) => x === file && args[i - 1] === "-i"))
        throw new MediaError("failed", `subtitles filter file ${file} is also opened with -i`);
      held.push(`subtitles=filename=${file}:fontsdir=${FONTS_DIR}`);
      return `${lead}null@${nonce}${held.length - 1}`;
    });
  });
  const secured = secureFfmpegArgs(checked, sniffable);
  if (!held.length) return secured;
  const back = new RegExp(`null@${nonce}(\\d+)`, "g");
  return secured.map((a) => a.replace(back, (_m, i: string) => held[Number(i)]!));
}

/** Combine the caller's signal and timeout into one signal plus the reason to report. */
export function runSignal(io: { signal?: AbortSignal; timeoutMs?: number }): {
  signal: AbortSignal | undefined;
  reason(): MediaError;
  dispose(): void;
} {
  const ctl = new AbortController();
  let why: MediaError | undefined;
  const onAbort = () => {
    why ??= new MediaError("aborted", "aborted by caller");
    ctl.abort();
  };
  if (io.signal?.aborted) onAbort();
  io.signal?.addEventListener("abort", onAbort, { once: true });
  const timer =
    io.timeoutMs && io.timeoutMs > 0
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

  get activeCount(): number {
    return this.active;
  }

  get waitingCount(): number {
    return this.waiting.length;
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
