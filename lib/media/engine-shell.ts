// What the native and the wasm engine share around their own way of running ffmpeg: the closed check, the
// argument checks, the run's signal and time-out, the pool, a probe's refusal of what is not plain media. An
// engine (native.ts, wasm.ts) gives only where a run happens (its place: a temp dir, a worker) and how ffmpeg
// and ffprobe run there.

import { FFPROBE_ARGS, prepareRun, readHead, runSignal, validateIO } from "./common.ts";
import { MediaError } from "./errors.ts";
import type { MediaPool } from "./pool.ts";
import type { Probe } from "./probe.ts";
import type { EngineInput, MediaEngine, RunIO } from "./types.ts";
import { loadVips } from "./vips.ts";

/** A run's signal: aborted by the caller or the time-out, with the reason to throw. */
export type RunSignal = ReturnType<typeof runSignal>;

export interface EngineBackend<Place> {
  kind: MediaEngine["kind"];
  pool: MediaPool;
  /** The time-out of a run or probe, from the caller's (the wasm engine bounds it by its limits). */
  timeoutMs(asked: number | undefined): number | undefined;
  /** Input names the backend keeps for itself (a probe refuses them). */
  reservedNames?: readonly string[];
  /** Runs `fn` in a free place, queued behind the engine's limits. */
  inPlace<T>(fn: (place: Place) => Promise<T>, s: RunSignal): Promise<T>;
  /** ffmpeg with the prepared arguments; the outputs by name. */
  ffmpeg(
    place: Place,
    args: string[],
    io: RunIO,
    s: RunSignal,
    prepared: string[],
  ): Promise<Record<string, Uint8Array>>;
  /** ffprobe with its arguments on the input `name`. */
  ffprobe(place: Place, args: string[], name: string, data: EngineInput, s: RunSignal): Promise<Probe>;
  warmup(): Promise<void>;
  /** Stops whatever runs, for good. */
  kill(): Promise<void>;
}

/** The engine around a backend. */
export function engineShell<Place>(backend: EngineBackend<Place>): MediaEngine {
  let closed = false;
  const open = () => {
    if (closed) throw new MediaError("engine_unavailable", "engine closed");
  };
  return {
    kind: backend.kind,
    pool: backend.pool,
    get pending() {
      const s = backend.pool.stats();
      return s.active + s.waiting;
    },

    async run(args, io: RunIO) {
      open();
      const prepared = prepareRun(args, io);
      const runArgs = Array.isArray(prepared) ? prepared : await prepared;
      const s = runSignal({ signal: io.signal, timeoutMs: backend.timeoutMs(io.timeoutMs) });
      try {
        return await backend.inPlace((place) => backend.ffmpeg(place, args, io, s, runArgs), s);
      } finally {
        s.dispose();
      }
    },

    async probe(data, name = "input", opts = {}): Promise<Probe> {
      open();
      validateIO([], { inputs: { [name]: data }, outputs: [] });
      if (backend.reservedNames?.includes(name)) throw new MediaError("failed", `reserved name ${name}`);
      // Refuses what is not plain media before anything starts (a stream by its first bytes).
      const args = FFPROBE_ARGS(name, data instanceof Uint8Array ? data : await readHead(data));
      const s = runSignal({ signal: opts.signal, timeoutMs: backend.timeoutMs(opts.timeoutMs) });
      try {
        return await backend.inPlace((place) => backend.ffprobe(place, args, name, data, s), s);
      } finally {
        s.dispose();
      }
    },

    vips: () => loadVips(),
    warmup: () => backend.warmup(),

    async close() {
      closed = true;
      await backend.kill();
    },
  };
}
