// The process's media pool (issue 20 item 3, lib/media/pool.ts): a FIFO of places shared by the engine's
// ffmpeg runs and any other heavy work, whatever the job kind; its stats are what /metrics shows.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { loadConfig } from "../../core/config.ts";
import { createMediaEngine, createMediaPool, defaultMediaConcurrency, isMediaError } from "../../lib/media/index.ts";
import { ENGINE_MODES } from "./util.ts";

const t = suite("media pool");
const tick = () => new Promise((r) => setTimeout(r, 5));

t("holds at most its size at once, in arrival order, and says so", async () => {
  const pool = createMediaPool(2);
  const order: number[] = [];
  const gates: Array<() => void> = [];
  const runs = [0, 1, 2, 3].map((i) =>
    pool.run(() => new Promise<void>((resolve) => gates.push(() => (order.push(i), resolve())))),
  );
  await tick();
  assert.equal(pool.stats(), { size: 2, active: 2, waiting: 2 });
  gates.shift()!();
  await tick();
  assert.equal(pool.stats(), { size: 2, active: 2, waiting: 1 });
  while (gates.length) {
    gates.shift()!();
    await tick();
  }
  await Promise.all(runs);
  assert.equal(order, [0, 1, 2, 3]);
  assert.equal(pool.stats(), { size: 2, active: 0, waiting: 0 });
});

t("work aborted while it waits leaves the queue; a failure frees its place", async () => {
  const pool = createMediaPool(1);
  let release!: () => void;
  const holder = pool.run(() => new Promise<void>((r) => (release = r)));
  const ac = new AbortController();
  const waiting = pool.run(async () => "never", ac.signal);
  await tick();
  ac.abort();
  const err = await waiting.catch((e) => e);
  assert.ok(isMediaError(err) && err.code === "aborted", String(err));
  assert.equal(pool.stats(), { size: 1, active: 1, waiting: 0 });
  release();
  await holder;
  await pool
    .run(async () => {
      throw new Error("boom");
    })
    .catch(() => {});
  assert.is(await pool.run(async () => "next"), "next");
  assert.equal(pool.stats(), { size: 1, active: 0, waiting: 0 });
});

t("MEDIA_CONCURRENCY sizes it: default the cores, at least 1", () => {
  assert.is(loadConfig({}).mediaConcurrency, defaultMediaConcurrency());
  assert.is(loadConfig({ MEDIA_CONCURRENCY: "3" }).mediaConcurrency, 3);
  assert.throws(() => loadConfig({ MEDIA_CONCURRENCY: "0" }), /MEDIA_CONCURRENCY must be at least 1/);
  assert.throws(() => loadConfig({ MEDIA_CONCURRENCY: "two" }), /MEDIA_CONCURRENCY/);
});

for (const mode of ENGINE_MODES) {
  t(`the ${mode} engine's runs take the pool's places, shared with other work`, async () => {
    const pool = createMediaPool(1);
    const engine = createMediaEngine({ mode, pool });
    try {
      assert.is(engine.pool, pool);
      let release!: () => void;
      const other = pool.run(() => new Promise<void>((r) => (release = r)));
      let ran = false;
      const run = engine
        .run(["-f", "lavfi", "-i", "anullsrc=r=8000:cl=mono", "-t", "0.1", "out.wav"], { outputs: ["out.wav"] })
        .then((o) => ((ran = true), o));
      await new Promise((r) => setTimeout(r, 300));
      assert.not.ok(ran, "the run waited for the place other work held");
      assert.is(engine.pending, 2);
      release();
      await other;
      assert.ok((await run)["out.wav"]!.byteLength > 44);
    } finally {
      await engine.close();
    }
  });
}

t.run();
