// CPU-bound JavaScript off the event loop. `inThread(module, name, args)` calls an exported function of one of
// our modules in a worker thread and resolves with what it returns.
//
// Why: a worker process's event loop also refreshes its queue jobs' heartbeats (every few seconds; pg-boss
// gives an attempt up after 10 s without one) and answers its probes. A render of a few CPU-seconds on that
// loop is harmless alone, but on a loaded machine it stretches to more than 10 s of wall time: the queue
// then takes the attempt for dead and starts it again elsewhere, and a job can run out of attempts without
// ever failing (what was measured before this: docs/decisions.md, "CPU-bound JavaScript in worker threads").
//
// Threads are made on demand, at most one per core, and ended after a minute idle (each holds its own copy of
// the modules it loaded). A call aborted by its signal ends its thread, the only way to stop pure CPU work;
// the next call makes a fresh one. Arguments and results are structured-cloned; the ArrayBuffers of typed
// arrays in a result are transferred, not copied, when the array covers its buffer whole (a small Node Buffer
// is a slice of a pool the thread goes on using, and is copied). The caller bounds how much runs at once (the
// media pool).
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";

const WORKER_URL = new URL("./thread.worker.mjs", import.meta.url);
const IDLE_MS = 60_000;

type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; message: string; name?: string };

interface Thread {
  worker: Worker;
  busy: boolean;
  idle?: ReturnType<typeof setTimeout>;
  settle?: (reply: Reply) => void;
  gone?: true;
}

const threads = new Set<Thread>();
const waiting: Array<(t: Thread) => void> = [];
let nextId = 1;

export class ThreadError extends Error {
  override name = "ThreadError";
}

function spawn(): Thread {
  const worker = new Worker(WORKER_URL);
  worker.unref(); // an idle thread never keeps the process alive
  const t: Thread = { worker, busy: false };
  worker.on("message", (reply: Reply) => t.settle?.(reply));
  // Ended here or dead on its own: whatever it held fails now rather than hanging, and someone waiting for a
  // thread gets a fresh one in its place.
  const gone = (message: string) => {
    if (t.gone) return;
    t.gone = true;
    threads.delete(t);
    clearTimeout(t.idle);
    t.settle?.({ id: -1, ok: false, message });
    const next = waiting.shift();
    if (next) next(spawn());
  };
  worker.on("error", (err) => gone(`thread failed: ${err.message}`));
  worker.on("exit", (code) => gone(`thread exited with code ${code}`));
  threads.add(t);
  return t;
}

function acquire(): Promise<Thread> {
  for (const t of threads) {
    if (!t.busy) return Promise.resolve(take(t));
  }
  if (threads.size < availableParallelism()) return Promise.resolve(take(spawn()));
  return new Promise((resolve) => waiting.push((t) => resolve(take(t))));
}

function take(t: Thread): Thread {
  t.busy = true;
  clearTimeout(t.idle);
  t.worker.ref(); // a call in flight keeps the process alive until it answers
  return t;
}

function release(t: Thread): void {
  t.settle = undefined;
  t.worker.unref();
  if (t.gone || !threads.has(t)) return;
  const next = waiting.shift();
  if (next) {
    next(t);
    return;
  }
  t.busy = false;
  t.idle = setTimeout(() => end(t), IDLE_MS);
  t.idle.unref();
}

/** Ends a thread (its exit event does the rest: see `gone`). */
function end(t: Thread): void {
  threads.delete(t);
  void t.worker.terminate();
}

/**
 * Calls `name` exported by `module` (a URL of one of our modules, usually `new URL("./x.ts", import.meta.url)`)
 * with `args` in a worker thread. Rejects with a ThreadError carrying the thread's message when it throws, and
 * with `signal`'s reason when it aborts (the thread is ended).
 */
export async function inThread<T>(
  module: URL,
  name: string,
  args: readonly unknown[],
  signal?: AbortSignal,
): Promise<T> {
  signal?.throwIfAborted();
  const t = await acquire();
  if (signal?.aborted) {
    release(t);
    throw signal.reason;
  }
  const id = nextId++;
  try {
    return await new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        t.settle = undefined;
        end(t);
        reject(signal!.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      t.settle = (reply) => {
        if (reply.id !== id && reply.id !== -1) return;
        signal?.removeEventListener("abort", onAbort);
        if (reply.ok) resolve(reply.value as T);
        else reject(new ThreadError(reply.message));
      };
      t.worker.postMessage({ id, module: module.href, name, args });
    });
  } finally {
    release(t);
  }
}
