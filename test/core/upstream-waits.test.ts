// Waiting on an upstream without holding a slot (issue 20 item 1, core/upstream-waits.ts), with a stand-in
// provider that lives in this process as a remote service would: it counts polls, notices two polls of one
// handle at once, and answers pending until its work is due. On both backends. No duration is asserted:
// order and counts are (a slot held during the wait would show as jobs that never overlap).
import { createHmac, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { z } from "zod";
import { type UpstreamProvider, UpstreamTimeoutError } from "../../contracts/upstream.ts";
import { JobFailure, type JobKindDeclaration } from "../../core/jobs.ts";
import { definePlugin, operation } from "../../core/plugin.ts";
import { callbackSecret } from "../../core/upstream-waits.ts";
import { QUEUED_PROCESSING_COMPLETE } from "../../lib/job-states.ts";
import { MAX_POLL_ERRORS } from "../../lib/poll-backoff.ts";
import { packRequest, unpackRequest } from "../../lib/sandbox-upstream.ts";
import account from "../../plugins/account/index.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------------------
// The stand-in upstream: one "remote" state for every kernel of the test, as a real service would be.

type Mode = "timed" | "never" | "poll-errors" | "broken" | "fail" | "callback";
interface Request {
  mode: Mode;
  /** How long the work takes (timed), in ms. */
  ms: number;
  /** The poll interval the provider suggests. */
  every: number;
  deadline?: number;
}
interface Work extends Request {
  id: string;
  job: string;
  submittedAt: number;
  polls: number;
  inFlight: number;
  maxInFlight: number;
  errorsLeft: number;
  cancelled: boolean;
  released: boolean;
  calledBack: boolean;
  doneAt?: number;
  callback?: { url: string; secret: string };
}
const remote = new Map<string, Work>();
const builds = new Map<string, number>();
/** The most works pending upstream at one moment, of those given. */
function mostAtOnce(works: Work[]): number {
  return Math.max(
    ...works.map(
      (w) => works.filter((o) => o.submittedAt <= w.submittedAt && (o.doneAt ?? Infinity) > w.submittedAt).length,
    ),
  );
}

const standIn: UpstreamProvider<Request & { job: string }, { text: string }> = {
  name: "stand-in",
  async submit(req, options) {
    const id = `up-${randomBytes(6).toString("hex")}`;
    remote.set(id, {
      ...req,
      id,
      submittedAt: Date.now(),
      polls: 0,
      inFlight: 0,
      maxInFlight: 0,
      errorsLeft: 2,
      cancelled: false,
      released: false,
      calledBack: false,
      ...(options.callback ? { callback: options.callback } : {}),
    });
    return { id, pollAfterMs: req.every, data: { job: req.job } };
  },
  async poll(handle) {
    const w = remote.get(handle.id)!;
    w.inFlight++;
    w.maxInFlight = Math.max(w.maxInFlight, w.inFlight);
    try {
      await sleep(20); // a round trip: two polls at once would overlap here
      w.polls++;
      if (w.mode === "broken" || (w.mode === "poll-errors" && w.errorsLeft-- > 0))
        throw new Error("503 from the stand-in");
      if (w.mode === "fail") return { state: "failed", error: new Error("the stand-in refused the work") };
      const elapsed = Date.now() - w.submittedAt;
      const due =
        w.mode === "timed" || w.mode === "poll-errors" ? elapsed >= w.ms : w.mode === "callback" ? w.calledBack : false;
      if (due) {
        w.doneAt ??= Date.now();
        return { state: "done", result: { text: `made by ${w.id}` } };
      }
      return {
        state: "pending",
        progress: w.mode === "timed" ? Math.min(0.99, elapsed / w.ms) : 0.1,
        message: "Working",
        pollAfterMs: w.every,
      };
    } finally {
      w.inFlight--;
    }
  },
  async cancel(handle) {
    remote.get(handle.id)!.cancelled = true;
  },
  async release(handle) {
    remote.get(handle.id)!.released = true;
  },
};

const TEXTS = { timedOut: "The upstream timed out.", failed: "The upstream failed." };

const waitJob: JobKindDeclaration<Request> = {
  ...QUEUED_PROCESSING_COMPLETE,
  failError: TEXTS.failed,
  retries: 1,
  // One slot: were a wait to hold it, no two jobs would ever be pending upstream at once.
  concurrency: 1,
  async run(ctx) {
    if (ctx.state === "queued") await ctx.moveTo("processing");
    try {
      const result = await ctx.awaitUpstream(
        "main",
        standIn,
        () => {
          builds.set(ctx.jobId, (builds.get(ctx.jobId) ?? 0) + 1);
          return { ...ctx.input, job: ctx.jobId };
        },
        { deadlineSeconds: ctx.input.deadline ?? 600, onProgress: (f, m) => ctx.progress(f * 100, m) },
      );
      return { state: "complete", output: result };
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      throw new JobFailure(err instanceof UpstreamTimeoutError ? TEXTS.timedOut : TEXTS.failed);
    }
  },
};

const waiter = definePlugin({
  name: "waiter",
  rateLimits: { "POST /wait": [{ limit: 100_000, windowSeconds: 60 }] },
  jobs: { wait: waitJob },
  operations: [
    operation({
      method: "POST",
      path: "/wait",
      status: 202,
      input: z.object({
        mode: z.enum(["timed", "never", "poll-errors", "broken", "fail", "callback"]),
        ms: z.number().int().min(0),
        every: z.number().int().min(0),
        deadline: z.number().int().positive().optional(),
      }),
      async handle(ctx) {
        const job = await ctx.submitJob({
          kind: "wait",
          credits: 5,
          state: "queued",
          input: ctx.input,
          insufficientCredits: () => "Insufficient credits",
        });
        return { job_id: job.jobId };
      },
    }),
  ],
});

// ---------------------------------------------------------------------------------------------------------

const SECRET = "a-callback-secret-of-thirty-two-characters-or-more";

async function jobRow(tk: TestKernel, id: string) {
  return tk.kernel.database.kysely
    .selectFrom("jobs")
    .select(["state", "error", "credits_used", "credits_refunded", "progress", "output"])
    .where("id", "=", id)
    .executeTakeFirstOrThrow();
}
async function waitRow(tk: TestKernel, id: string) {
  return tk.kernel.database.kysely.selectFrom("job_waits").selectAll().where("job_id", "=", id).executeTakeFirst();
}
async function untilEnded(tk: TestKernel, partnerId: string, id: string, ms = 60_000) {
  const end = Date.now() + ms;
  for (;;) {
    const job = await tk.kernel.jobs.current(id, partnerId);
    if (job?.terminal) return job;
    if (Date.now() > end) throw new Error(`job ${id} still ${job?.state} after ${ms} ms`);
    await sleep(50);
  }
}
async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, what: string, ms = 30_000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`${what}: ${JSON.stringify(v)}`);
    await sleep(25);
  }
}
async function submit(tk: TestKernel, key: string, body: Request): Promise<string> {
  const res = await tk.request("POST", "/wait", { key, body });
  assert.is(res.status, 202, JSON.stringify(res.body));
  return res.body.job_id;
}
const workOf = (jobId: string) => [...remote.values()].find((w) => w.job === jobId)!;

for (const backend of await databaseBackends()) {
  const t = suite(`upstream waits on ${backend.name}`);
  const open = async (o: { databaseUrl?: string; dataDir?: string; env?: Record<string, string> } = {}) =>
    createTestKernel({
      plugins: [account, waiter],
      databaseUrl: backend.name === "postgres" ? (o.databaseUrl ?? (await isolatedPostgresDatabase())) : undefined,
      ...(o.dataDir ? { dataDir: o.dataDir } : {}),
      env: { UPSTREAM_CALLBACK_SECRET: SECRET, PUBLIC_URL: "https://mediagate.test", ...o.env },
      start: true,
    });

  /** A started kernel and a partner with 1000 credits for `body`; the kernel is closed after, however it ends. */
  const onKernel = async (body: (tk: TestKernel, partnerId: string, key: string) => Promise<void>) => {
    const tk = await open();
    try {
      const { id: partnerId, key } = await tk.partner({ credits: 1000 });
      await body(tk, partnerId, key);
    } finally {
      await tk.close();
    }
  };

  t("waits hold no slot: twelve jobs wait at once on a kind with one slot, each built and submitted once", () =>
    onKernel(async (tk, partnerId, key) => {
      const ids = await Promise.all(
        Array.from({ length: 12 }, () => submit(tk, key, { mode: "timed", ms: 2500, every: 1000 })),
      );
      for (const id of ids) {
        const job = await untilEnded(tk, partnerId, id);
        assert.is(job.state, "complete");
        const row = await jobRow(tk, id);
        assert.equal(row.output, { text: `made by ${workOf(id).id}` });
        assert.is(row.credits_refunded, 0);
        assert.is(builds.get(id), 1, "the request is built once");
        const work = workOf(id);
        assert.is(work.maxInFlight, 1, "never two polls of one handle at once");
        assert.ok(work.polls >= 2, `polled while pending (${work.polls})`);
        // Released right after the job's end commits (which is what the status read above saw).
        await until(
          async () => work.released,
          (released) => released,
          "released once the job ended",
          10_000,
        );
        assert.is(await waitRow(tk, id), undefined, "the wait row goes with the job");
      }
      assert.is(mostAtOnce(ids.map(workOf)), 12, "every job was pending upstream at the same time");
    }),
  );

  t(
    "an upstream that asks for a look every 200 ms still frees the slot: an attempt sleeps a quarter second at most",
    () =>
      onKernel(async (tk, partnerId, key) => {
        const ids = await Promise.all(
          Array.from({ length: 4 }, () => submit(tk, key, { mode: "timed", ms: 1500, every: 200 })),
        );
        for (const id of ids) assert.is((await untilEnded(tk, partnerId, id)).state, "complete");
        // Holding the one slot through its polls, each job would have waited alone.
        assert.is(mostAtOnce(ids.map(workOf)), 4, "every job was pending upstream at the same time");
      }),
  );

  t("progress of a pending upstream reaches the job; a failed upstream refunds", () =>
    onKernel(async (tk, partnerId, key) => {
      const slow = await submit(tk, key, { mode: "timed", ms: 3000, every: 1000 });
      await until(
        () => jobRow(tk, slow),
        (r) => (r.progress ?? 0) > 0 && r.state === "processing",
        "progress while pending",
      );
      const failed = await submit(tk, key, { mode: "fail", ms: 0, every: 0 });
      const job = await untilEnded(tk, partnerId, failed);
      assert.is(job.state, "error");
      assert.is(job.error, TEXTS.failed);
      assert.is((await jobRow(tk, failed)).credits_refunded, 5);
      assert.ok(workOf(failed).released);
      assert.is((await untilEnded(tk, partnerId, slow)).state, "complete");
    }),
  );

  t("a poll that fails is tried again with backoff; polls that keep failing fail the job", () =>
    onKernel(async (tk, partnerId, key) => {
      const flaky = await submit(tk, key, { mode: "poll-errors", ms: 0, every: 0 });
      assert.is((await untilEnded(tk, partnerId, flaky)).state, "complete");
      assert.is(workOf(flaky).polls, 3, "two failed looks, then the one that found it done");
      // A handle whose every look fails: stop after MAX_POLL_ERRORS, refunded. The backoff (1, 2, 4, 8, 16 s)
      // is skipped by moving the next poll forward, which only changes when it runs.
      const broken = await submit(tk, key, { mode: "broken", ms: 0, every: 0 });
      const db = tk.kernel.database.kysely;
      const end = Date.now() + 60_000;
      while (!(await tk.kernel.jobs.current(broken, partnerId))!.terminal && Date.now() < end) {
        const w = await waitRow(tk, broken);
        if (w?.parked)
          await db
            .updateTable("job_waits")
            .set({ wake: false })
            .where("job_id", "=", broken)
            .execute()
            .then(() => tk.kernel.jobs.wakeUpstream("stand-in", w.upstream_id));
        await sleep(50);
      }
      const job = await untilEnded(tk, partnerId, broken);
      assert.is(job.state, "error");
      assert.is(job.error, TEXTS.failed);
      assert.is(workOf(broken).polls, MAX_POLL_ERRORS);
      assert.is((await jobRow(tk, broken)).credits_refunded, 5);
    }),
  );

  t("past its deadline the upstream work is cancelled and the job fails, refunded", () =>
    onKernel(async (tk, partnerId, key) => {
      const id = await submit(tk, key, { mode: "never", ms: 0, every: 1000, deadline: 30 });
      await until(
        () => waitRow(tk, id),
        (w) => !!w && w.polls >= 1,
        "polled once",
      );
      assert.not.ok(workOf(id).cancelled);
      tk.clock.advance(31_000); // the deadline is read from the kernel's clock
      const job = await untilEnded(tk, partnerId, id);
      assert.is(job.state, "error");
      assert.is(job.error, TEXTS.timedOut);
      assert.ok(workOf(id).cancelled, "the upstream was told to stop");
      assert.is((await jobRow(tk, id)).credits_refunded, 5);
    }),
  );

  t(
    "a signed callback wakes the job at once; a bad signature, a bad body or callbacks off change nothing",
    async () => {
      const tk = await open();
      const off = await open({ env: { UPSTREAM_CALLBACK_SECRET: "" } });
      try {
        const { id: partnerId, key } = await tk.partner({ credits: 1000 });
        // The provider asks to be polled again in an hour: only the callback can end this test in time.
        const id = await submit(tk, key, { mode: "callback", ms: 0, every: 3_600_000 });
        const parked = await until(
          () => waitRow(tk, id),
          (w) => !!w?.parked,
          "parked",
        );
        const work = workOf(id);
        assert.ok(work.callback, "the provider was given where to call back");
        assert.is(work.callback!.url, "https://mediagate.test/upstream/stand-in/callback");
        assert.is(work.callback!.secret, callbackSecret(SECRET, "stand-in"));
        const now = () => String(Math.floor(tk.clock.now() / 1000));
        const post = (
          kernel: TestKernel,
          body: string,
          signature: string | null,
          provider = "stand-in",
          stamp = now(),
        ) =>
          kernel.fetch(
            new Request(`http://mediagate.test/upstream/${provider}/callback`, {
              method: "POST",
              headers: {
                "content-type": "application/json",
                "x-upstream-timestamp": stamp,
                ...(signature ? { "x-upstream-signature": signature } : {}),
              },
              body,
            }),
          );
        const sign = (body: string, secret = work.callback!.secret, stamp = now()) =>
          `sha256=${createHmac("sha256", secret).update(`${stamp}.${body}`).digest("hex")}`;
        const body = JSON.stringify({ id: work.id });

        assert.is((await post(tk, body, null)).status, 401);
        assert.is(
          (await post(tk, body, sign(body, callbackSecret(SECRET, "another")))).status,
          401,
          "another provider's key",
        );
        assert.is((await post(tk, body, sign(body), "another")).status, 401, "signed for stand-in, sent as another");
        assert.is((await post(tk, body, "sha256=zz")).status, 401);
        // Signed, but not now: a callback captured earlier cannot be replayed; nor can its time be changed.
        const old = String(Math.floor(tk.clock.now() / 1000) - 600);
        assert.is(
          (await post(tk, body, sign(body, work.callback!.secret, old), "stand-in", old)).status,
          401,
          "ten minutes old",
        );
        assert.is(
          (await post(tk, body, sign(body, work.callback!.secret, old))).status,
          401,
          "another time than signed",
        );
        assert.is((await post(tk, body, sign(body), "stand-in", "soon")).status, 401, "not a time");
        const notJson = "{not json";
        assert.is((await post(tk, notJson, sign(notJson))).status, 400);
        const noId = JSON.stringify({ id: 7 });
        assert.is((await post(tk, noId, sign(noId))).status, 400);
        // A chunked body declares no length: it is counted as it streams, and refused past 16 KB unsigned.
        const chunked = new ReadableStream<Uint8Array>({
          start(c) {
            for (let i = 0; i < 40; i++) c.enqueue(new Uint8Array(1024).fill(0x20));
            c.close();
          },
        });
        const big = await tk.fetch(
          new Request("http://mediagate.test/upstream/stand-in/callback", {
            method: "POST",
            headers: {
              "content-type": "application/json",
              "x-upstream-timestamp": now(),
              "x-upstream-signature": sign(body),
            },
            body: chunked,
            duplex: "half",
          } as RequestInit),
        );
        assert.is(big.status, 413);
        const unknown = JSON.stringify({ id: "up-nobody" });
        const answer = await post(tk, unknown, sign(unknown));
        assert.is(answer.status, 202);
        assert.is((await answer.json()).woken, false);
        assert.is((await post(off, body, sign(body))).status, 404, "off without the secret");
        assert.equal(await waitRow(tk, id), parked, "nothing moved");

        work.calledBack = true;
        const woke = await post(tk, body, sign(body));
        assert.is(woke.status, 202);
        assert.is((await woke.json()).woken, true);
        const job = await untilEnded(tk, partnerId, id, 20_000);
        assert.is(job.state, "complete");
        assert.is(work.maxInFlight, 1);
      } finally {
        await tk.close();
        await off.close();
      }
    },
  );

  t("a restart while jobs wait loses none: the next kernel polls them, none is submitted twice", async () => {
    const dataDir = backend.name === "pglite" ? mkdtempSync(join(tmpdir(), "mediagate-waits-")) : undefined;
    const databaseUrl = backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined;
    try {
      const first = await open({ databaseUrl, dataDir });
      const { id: partnerId, key } = await first.partner({ credits: 1000 });
      const ids = await Promise.all(
        Array.from({ length: 4 }, () => submit(first, key, { mode: "timed", ms: 3000, every: 1000 })),
      );
      for (const id of ids)
        await until(
          () => waitRow(first, id),
          (w) => !!w?.parked,
          "parked",
        );
      await first.close();
      const second = await open({ databaseUrl, dataDir });
      try {
        for (const id of ids) {
          assert.is((await untilEnded(second, partnerId, id)).state, "complete");
          assert.is(builds.get(id), 1, "submitted once across the restart");
          assert.is(workOf(id).maxInFlight, 1);
          assert.is((await jobRow(second, id)).credits_refunded, 0);
        }
      } finally {
        await second.close();
      }
    } finally {
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    }
  });

  if (backend.name === "postgres") {
    t("two processes on one database: each handle has one poller at a time, callbacks included", async () => {
      const databaseUrl = await isolatedPostgresDatabase();
      const a = await open({ databaseUrl });
      const b = await open({ databaseUrl });
      try {
        const { id: partnerId, key } = await a.partner({ credits: 1000 });
        const ids = await Promise.all(
          Array.from({ length: 10 }, (_, i) => submit(i % 2 ? a : b, key, { mode: "timed", ms: 4000, every: 1000 })),
        );
        // Callbacks through either process while they wait: an early poll, never a second poller.
        for (let round = 0; round < 3; round++) {
          await sleep(700);
          for (const [i, id] of ids.entries()) {
            const w = remote.get((await waitRow(a, id))?.upstream_id ?? "");
            if (w) await (i % 2 ? b : a).kernel.jobs.wakeUpstream("stand-in", w.id);
          }
        }
        for (const id of ids) {
          assert.is((await untilEnded(a, partnerId, id)).state, "complete");
          assert.is(workOf(id).maxInFlight, 1, "one poller per handle");
          assert.is(builds.get(id), 1);
        }
      } finally {
        await a.close();
        await b.close();
      }
    });
  }

  t.run();
}

const packing = suite("sandbox requests as recorded");
packing("bytes of every kind come back as copies, in place; functions and signals are left out", () => {
  const backing = Uint8Array.from({ length: 64 }, (_, i) => i);
  const request = {
    prompt: "a lighthouse",
    frame: Buffer.from([1, 2, 3, 250]),
    view: backing.subarray(10, 20),
    nested: [{ bytes: new Uint8Array([9, 8]) }, [Buffer.alloc(0)], null],
    signal: new AbortController().signal,
    onProgress: () => {},
    read: async () => new Uint8Array(),
  };
  const back = unpackRequest(packRequest(request)) as any;
  assert.is(back.prompt, "a lighthouse");
  assert.equal([...back.frame], [1, 2, 3, 250]);
  assert.equal([...back.view], [10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
  assert.equal([...back.nested[0].bytes], [9, 8]);
  assert.is(back.nested[1][0].byteLength, 0);
  assert.is(back.nested[2], null);
  assert.ok(back.frame instanceof Uint8Array && !Buffer.isBuffer(back.frame));
  assert.is(back.frame.buffer.byteLength, 4, "a copy, not a view of the whole record");
  assert.not.ok("signal" in back || "onProgress" in back || "read" in back);
  // A Buffer is stored as its bytes, not as JSON numbers: the record is about the size of what it holds.
  const clip = Buffer.alloc(1_000_000, 7);
  assert.ok(packRequest({ clip }).byteLength < 1_000_100);
});
packing.run();
