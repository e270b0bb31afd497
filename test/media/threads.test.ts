// lib/threads.ts: CPU-bound work in a worker thread while the event loop keeps turning (what keeps a worker's
// queue heartbeats going during a render). Results come back whole, typed arrays included; a thread's throw
// is the caller's ThreadError; an abort ends the thread with the signal's reason and the next call still runs.

import { availableParallelism } from "node:os";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { inThread, ThreadError } from "../../lib/threads.ts";
import { rejection } from "../helpers/assert.ts";
import { crunch } from "../helpers/thread-tasks.ts";

const TASKS = new URL("../helpers/thread-tasks.ts", import.meta.url);
const t = suite("work in a thread");

t("answers what the function returns, typed arrays included, and the event loop runs meanwhile", async () => {
  let turned = false;
  setTimeout(() => (turned = true), 0);
  // Long enough that, were it on this thread, the timer above could not fire before it returned.
  const out = await inThread<ReturnType<typeof crunch>>(TASKS, "crunch", [300_000_000, 1000]);
  assert.ok(turned, "a timer fired while the thread worked");
  assert.equal(out, crunch(300_000_000, 1000));
  assert.instance(out.bytes, Uint8Array);
});

t("more calls than cores all finish, each with its own answer", async () => {
  const n = availableParallelism() * 2 + 1;
  const outs = await Promise.all(
    Array.from({ length: n }, (_, i) => inThread<ReturnType<typeof crunch>>(TASKS, "crunch", [1000 * i, i])),
  );
  assert.equal(
    outs,
    Array.from({ length: n }, (_, i) => crunch(1000 * i, i)),
  );
});

t(
  "small Buffers from one thread, one call after another, each come back whole (the thread's Buffer pool is copied, not taken from it)",
  async () => {
    // Called one after another, so every call's Buffer is cut from the same thread's pool.
    const outs: Uint8Array[] = [];
    for (let i = 0; i < 5; i++)
      outs.push(await inThread<Uint8Array>(TASKS, "pooled", [`call ${i}: ${"x".repeat(i * 10)}`]));
    assert.equal(
      outs.map((b) => new TextDecoder().decode(b)),
      Array.from({ length: 5 }, (_, i) => `call ${i}: ${"x".repeat(i * 10)}`),
    );
  },
);

t("a throw in the thread is a ThreadError with its message; a missing export is one too", async () => {
  const err = await rejection(inThread(TASKS, "fails", ["out of range"]));
  assert.instance(err, ThreadError);
  assert.is(err.message, "out of range");
  assert.match((await rejection(inThread(TASKS, "notAFunction", []))).message, /exports no function notAFunction/);
});

t("an abort ends a thread that never returns, with the signal's reason; the next call runs", async () => {
  const controller = new AbortController();
  const stuck = inThread(TASKS, "forever", [], controller.signal);
  setTimeout(() => controller.abort(new Error("stop now")), 50);
  assert.is((await rejection(stuck)).message, "stop now");
  assert.is(
    (await rejection(inThread(TASKS, "crunch", [1, 1], AbortSignal.abort(new Error("already"))))).message,
    "already",
  );
  assert.equal(await inThread(TASKS, "crunch", [10, 3]), crunch(10, 3));
});

t.run();
