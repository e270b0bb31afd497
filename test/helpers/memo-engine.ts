// A media engine that renders each distinct ffmpeg run once per test process: the same arguments and the same
// input bytes give the outputs of the first run. For tests whose sandbox makes the same media again and again
// (the social sandbox renders an 8-12 s ad per download, deterministically from the link): the sandbox's own
// code still runs in full (its markers, its plan, its speech), only the engine's identical work is shared.
// Every caller gets its own copies of the bytes. A failed run is not kept, so the next caller runs it again.
import { createHash } from "node:crypto";
import type { CapabilityHost } from "../../core/plugin.ts";
import type { MediaEngine } from "../../lib/media/index.ts";

type Outputs = Record<string, Uint8Array>;

export interface RunCache {
  runs: Map<string, Promise<Outputs>>;
  /** Runs answered from the cache (a test may assert the cache was used). */
  hits: number;
}

export const newRunCache = (): RunCache => ({ runs: new Map(), hits: 0 });

function keyOf(args: string[], io: Parameters<MediaEngine["run"]>[1]): string | undefined {
  const h = createHash("sha256");
  h.update(JSON.stringify({ args, outputs: io.outputs }));
  for (const group of [io.inputs ?? {}, io.fonts ?? {}]) {
    for (const name of Object.keys(group).sort()) {
      const bytes = group[name];
      if (!(bytes instanceof Uint8Array)) return undefined; // a streamed input is read once: run it for real
      h.update(`\0${name}\0${bytes.byteLength}\0`);
      h.update(bytes);
    }
    h.update("\0|");
  }
  return h.digest("hex");
}

const copy = (out: Outputs): Outputs => Object.fromEntries(Object.entries(out).map(([k, v]) => [k, new Uint8Array(v)]));

export function memoizedEngine(engine: MediaEngine, cache: RunCache): MediaEngine {
  const run: MediaEngine["run"] = async (args, io) => {
    const key = keyOf(args, io);
    if (key === undefined) return engine.run(args, io);
    let pending = cache.runs.get(key);
    if (pending) {
      cache.hits++;
    } else {
      // Not the caller's signal or progress: the result may serve others, whose own signals are checked below.
      const { signal: _signal, onProgress: _progress, ...rest } = io;
      pending = engine.run(args, rest);
      cache.runs.set(key, pending);
      pending.catch(() => cache.runs.delete(key));
    }
    const out = await pending;
    io.signal?.throwIfAborted();
    io.onProgress?.(1);
    return copy(out);
  };
  return new Proxy(engine, {
    get(target, prop) {
      if (prop === "run") return run;
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * `host` whose media engine renders through `cache`: what a sandbox provider's factory is given in place of its
 * host, so the sandbox's own code runs in full and only the engine's identical runs are shared.
 */
export function hostSharingRenders(host: CapabilityHost, cache: RunCache): CapabilityHost {
  let media: MediaEngine | undefined;
  const capability = ((name: string) =>
    name === "media"
      ? (media ??= memoizedEngine(host.capability("media"), cache))
      : host.capability(name as any)) as CapabilityHost["capability"];
  return { ...host, capability };
}
