// Image resampling off the main thread: native libvips through sharp when it is installed
// (resample-native.ts), else wasm-vips in a worker (resample.worker.mjs); Lanczos-3, then the enhance pass.
//
// One worker per process, made on first use and ended after a minute idle: wasm-vips holds ~150 MB, which a
// process that upscales nothing should not pay. Jobs run one at a time (vips already spreads one image over
// its own threads); aborting one ends the worker, and the next job starts a fresh one.
//
// Enhance (spec: factor 1 is "enhance only, same size"): an unsharp mask on lightness that acts on edges and
// leaves flat areas alone (m1 = 0), so detail gets crisper without lifting noise or shifting colours. Every
// factor gets it, with a radius that grows with the factor, because enlarging softens edges in proportion.
import { Worker } from "node:worker_threads";
import { MediaError } from "mediagate/plugin";
import type { Factor } from "./prices.ts";
import { loadSharp, upscaleNative } from "./resample-native.ts";

export const SHARPEN: Record<Factor, { sigma: number; m1: number; m2: number }> = {
  1: { sigma: 0.6, m1: 0, m2: 1.5 },
  2: { sigma: 0.8, m1: 0, m2: 1.5 },
  4: { sigma: 1.0, m1: 0, m2: 1.5 },
};

const IDLE_MS = 60_000;

export interface Resampled {
  bytes: Uint8Array;
  width: number;
  height: number;
}

type Reply =
  | { id: number; ok: true; bytes: Uint8Array; width: number; height: number }
  | { id: number; ok: false; message: string };

let worker: Worker | undefined;
let ready: Promise<void> | undefined;
let idle: ReturnType<typeof setTimeout> | undefined;
let chain: Promise<unknown> = Promise.resolve();
let nextId = 1;

function start(): { worker: Worker; ready: Promise<void> } {
  if (worker && ready) return { worker, ready };
  const w = new Worker(new URL("./resample.worker.mjs", import.meta.url));
  worker = w;
  ready = new Promise<void>((resolve, reject) => {
    const onMessage = (m: { ready?: boolean }) => {
      if (m.ready) {
        w.off("error", reject);
        resolve();
      }
    };
    w.on("message", onMessage);
    w.once("error", reject);
  });
  ready.catch(() => {});
  w.on("exit", () => {
    if (worker === w) worker = ready = undefined;
  });
  return { worker: w, ready };
}

function stop(w: Worker | undefined) {
  if (!w) return;
  if (worker === w) worker = ready = undefined;
  void w.terminate();
}

async function runOne(bytes: Uint8Array, factor: Factor, signal?: AbortSignal): Promise<Resampled> {
  if (idle) clearTimeout(idle);
  const { worker: w, ready: up } = start();
  w.ref();
  try {
    await up.catch((e) => {
      stop(w);
      throw new MediaError(
        "engine_unavailable",
        `image worker failed to start: ${e instanceof Error ? e.message : String(e)}`,
        { cause: e },
      );
    });
    const id = nextId++;
    return await new Promise<Resampled>((resolve, reject) => {
      const cleanup = () => {
        w.off("message", onMessage);
        w.off("error", onError);
        w.off("exit", onExit);
        signal?.removeEventListener("abort", onAbort);
      };
      const onMessage = (m: Reply) => {
        if (m.id !== id) return;
        cleanup();
        if (m.ok) resolve({ bytes: m.bytes, width: m.width, height: m.height });
        else reject(new MediaError("invalid_input", `vips: ${m.message}`));
      };
      const onError = (e: Error) => {
        cleanup();
        stop(w);
        reject(new MediaError("failed", `image worker crashed: ${e.message}`, { cause: e }));
      };
      const onExit = () => {
        cleanup();
        reject(new MediaError("failed", "image worker exited"));
      };
      const onAbort = () => {
        cleanup();
        stop(w);
        reject(new MediaError("aborted", "aborted by caller"));
      };
      if (signal?.aborted) return onAbort();
      w.on("message", onMessage);
      w.once("error", onError);
      w.once("exit", onExit);
      signal?.addEventListener("abort", onAbort, { once: true });
      // A copy is sent, not the caller's buffer: the caller may still need its bytes.
      w.postMessage({ id, bytes, factor, sharpen: SHARPEN[factor] });
    });
  } finally {
    if (worker === w) {
      w.unref();
      idle = setTimeout(() => stop(w), IDLE_MS);
      idle.unref();
    }
  }
}

/**
 * Which libvips resamples: `native` (sharp) when it is installed, as native ffmpeg is preferred over
 * ffmpeg.wasm, unless MEDIA_ENGINE=wasm asks for WebAssembly everywhere; `wasm` (the worker above) otherwise.
 */
export type ResampleEngine = "native" | "wasm";

export async function resampleEngine(choice: "auto" | "native" | "wasm" = "auto"): Promise<ResampleEngine> {
  return choice !== "wasm" && (await loadSharp()) ? "native" : "wasm";
}

/** Upscales by `factor` (1 = enhance at the same size) to a PNG; MediaError on an unreadable image. */
export async function upscaleImage(
  bytes: Uint8Array,
  factor: Factor,
  signal?: AbortSignal,
  engine?: ResampleEngine,
): Promise<Resampled> {
  const sharp = engine === "wasm" ? null : await loadSharp();
  if (sharp) return upscaleNative(sharp, bytes, factor, SHARPEN[factor], signal);
  if (engine === "native") throw new MediaError("engine_unavailable", "sharp (native libvips) is not installed");
  const run = chain.then(() => runOne(bytes, factor, signal));
  chain = run.catch(() => {});
  return run;
}
