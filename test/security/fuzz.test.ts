// The partner API against hostile input (issue 14 item 17): requests generated from schema/openapi.json by
// fuzz-generator.ts (every operation, every field, wrong types, NUL, lone surrogates, huge numbers, deep
// nesting, megabyte strings, prototype keys, wrong content types, broken multipart forms), sent through
// `app.fetch` with the sandbox providers. Every answer must be below 500, and a 4xx must leave the balance
// as it was. Object.prototype must stay clean. Cases the
// issue refuses outright (a NUL or an ill-formed string, items 12-13; a body type the operation does not
// take, item 16) must not succeed either.
//
// CI runs a seeded, stratified sample on each database backend (every operation, every kind of hostility);
//   FUZZ_FULL=1     every generated case, on each backend (several thousand; minutes)
//   FUZZ_SAMPLE=N   the sample size per backend (default below)
//   FUZZ_SEED=N     another seed (the run prints the one it used)
//   FUZZ_BACKEND=pglite|postgres   only that backend
//   FUZZ_LOG=file   also writes every case's answer there (one JSON line each), failing or not
// e.g. FUZZ_FULL=1 TEST_FILE_TIMEOUT_S=7200 npx tsx test/run.ts test/security/fuzz.test.ts
//
// The kernel runs its workers, so the fixtures' jobs finish (an owned track to extend, finished videos to
// merge, a download's files to read) and accepted requests run as they would. A job of an earlier case may
// therefore be refunded while a later case runs: the balance check reads the ledger rows written during the
// case and counts only those of jobs not seen before it (a charge, a charge-and-refund pair, a row of no
// job), so a background refund is not blamed on a 4xx, and a charge of a 4xx is not missed.
//
// Failures are collected, not thrown at the first one, so one run lists every case that fails (grouped by
// operation and status), which is what the person fixing them needs.

import { appendFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { suite } from "uvu";
import { createOutboundGuard } from "../../lib/outbound/index.ts";
import { pcm16Wav } from "../../lib/speech/pcm.ts";
import { plugins } from "../../plugins/index.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { createHttpApp } from "../../transports/http.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import {
  type FuzzCase,
  type FuzzFixtures,
  generateCases,
  loadOpenApi,
  PARTNER_PREFIX,
  sampleCases,
} from "./fuzz-generator.ts";

const FULL = process.env.FUZZ_FULL === "1";
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : 0x5eed17;
// Per backend. Most cases take a few milliseconds; the megabyte and 20,000-deep ones and those that reach
// the media engine take longer. Sized so both backends together stay around a minute or two on a loaded
// 2-CPU machine.
const SAMPLE = Number(process.env.FUZZ_SAMPLE ?? 160);
const LOG = process.env.FUZZ_LOG;
// A case that has not answered in this long is a failure of its own (a hang), and the run moves on.
const CASE_TIMEOUT_MS = 60_000;
const CREDITS = 1_000_000_000;
const UA = "mediagate-fuzz/1.0";
const FIXTURES = join(import.meta.dirname ?? "test/security", "../../../shared/fixtures/media");

/** A second of 8 kHz mono 16-bit silence: a real upload that the media engine reads quickly. */
function silentWav(seconds = 1, rate = 8000): Uint8Array {
  return pcm16Wav(new Int16Array(seconds * rate), rate);
}

const smallPng = () => new Uint8Array(readFileSync(join(FIXTURES, "libpng-test_with_url.png")));
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");

interface Failure {
  id: string;
  status: number | string;
  detail: string;
}

const backends = (await databaseBackends()).filter(
  (b) => !process.env.FUZZ_BACKEND || b.name === process.env.FUZZ_BACKEND,
);

for (const backend of backends) {
  const t = suite(`openapi fuzz on ${backend.name}`);
  let tk: TestKernel;
  let app: ReturnType<typeof createHttpApp>;
  let partnerId: string;
  let key: string;

  t.before(async () => {
    tk = await createTestKernel({
      plugins,
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
      env: { PUBLIC_URL: "https://media.example.test" },
      start: true,
      // No request of the fuzzer leaves the machine: every host name fails to resolve (a 400 for the partner).
      outbound: createOutboundGuard({
        lookup: async () => {
          throw new Error("no DNS in the fuzzer");
        },
      }),
    });
    app = createHttpApp(tk.kernel, { adminToken: tk.adminToken });
    // Limits out of the way: a 429 would hide what a field does to the handler behind it.
    const rateLimits = Object.fromEntries(
      [...tk.kernel.registry.rateLimits.keys()].map((name) => [name, 1_000_000_000]),
    );
    const p = await tk.partner({
      name: "Fuzz partner",
      credits: CREDITS,
      limits: { inflight_jobs: 1_000_000, rate_limits: rateLimits },
    });
    partnerId = p.id;
    key = p.key;
  });
  t.after(async () => {
    await tk?.close();
  });

  const send = async (method: string, path: string, body?: unknown) => {
    const res = await app.fetch(
      new Request(`http://mediagate.test${PARTNER_PREFIX}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          "user-agent": UA,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: res.status, body: parsed };
  };

  // The ledger since the last read: rows of jobs seen before belong to earlier cases (a background refund).
  let ledgerSeen = 0;
  const knownJobs = new Set<string>();
  const ledgerSince = async () => {
    const rows = await tk.kernel.database.kysely
      .selectFrom("ledger")
      .select(["id", "amount", "job_id", "type"])
      .where("partner_id", "=", partnerId)
      .where("id", ">", ledgerSeen)
      .orderBy("id")
      .execute();
    let own = 0;
    const kinds: string[] = [];
    for (const r of rows) {
      ledgerSeen = Math.max(ledgerSeen, Number(r.id));
      if (r.job_id !== null && knownJobs.has(r.job_id)) continue;
      own += Number(r.amount);
      kinds.push(`${r.type} ${r.amount}`);
    }
    for (const r of rows) if (r.job_id !== null) knownJobs.add(r.job_id);
    return { own, kinds };
  };

  /** Waits until every job of the account has ended (the fixtures' own jobs). */
  const settle = async (ids: string[]) => {
    // Generous: sandbox jobs take a second or two, a loaded CI machine many times that.
    const until = Date.now() + 300_000;
    while (Date.now() < until) {
      const states = await Promise.all(ids.map((id) => tk.kernel.jobs.current(id, partnerId)));
      if (states.every((s) => s?.terminal)) return states.map((s, n) => `${ids[n]} ${s!.state}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`fixture jobs did not finish: ${ids.join(", ")}`);
  };

  /** Real jobs of the fuzzing account for the path parameters, and values the baselines need. */
  async function fixtures(): Promise<FuzzFixtures> {
    const png = b64(smallPng());
    const made = async (what: string, path: string, body: Record<string, unknown>, field: string): Promise<string> => {
      const res = await send("POST", path, body);
      const id = res.body?.[field];
      if (typeof id !== "string" && typeof id !== "number")
        throw new Error(`fixture ${what}: ${path} answered ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
      return String(id);
    };
    // An image answers with its public id and its generation number; status reads take either.
    const image = await made(
      "image",
      "/generate-image",
      { prompt: "a red fox in the snow", model: "image-b-2" },
      "public_id",
    );
    const generation = await made(
      "image",
      "/generate-image",
      { prompt: "a red fox at night", model: "image-b-2" },
      "generation_id",
    );
    const video1 = await made("video", "/generate-video", { prompt: "waves on a beach" }, "job_id");
    const video2 = await made("video", "/generate-video", { prompt: "clouds over hills" }, "job_id");
    const music = await made("music", "/generate-music", { prompt: "calm piano" }, "job_id");
    const download = await made(
      "social download",
      "/social-download",
      { url: "https://www.instagram.com/reel/Cabc/" },
      "download_id",
    );
    // Finished jobs: an owned track to extend, videos to merge, a download's files to read.
    await settle([video1, video2, music, download]);
    const voices = await send("GET", "/voiceover/voices");
    const voice = voices.body?.voices?.[0]?.voice_id;
    if (typeof voice !== "string") throw new Error(`no voice: ${JSON.stringify(voices.body).slice(0, 300)}`);
    return {
      realIds: { id: [image, generation], job_id: [video1, music], download_id: [download], idx: ["0"] },
      otherIds: [music, image, download],
      baselines: {
        "POST /webhook": { url: "https://fuzz.invalid/hook" },
        "POST /webhook/test": { url: "https://fuzz.invalid/hook" },
        "POST /generate-image": { prompt: "a red fox in the snow", model: "image-b-2" },
        "POST /generate-video": { prompt: "waves on a beach" },
        "POST /generate-animation": { prompt: "a fox runs", start_image_base64: png, start_image_mime: "image/png" },
        "POST /merge-videos": { job_ids: [video1, video2] },
        "POST /upscale-image": { image_base64: png, upscale_factor: 2 },
        "POST /upscale-video": { video_url: "https://fuzz.invalid/clip.mp4", upscale_factor: 2 },
        "POST /generate-voiceover": { text: "hello there", voice_id: voice },
        "POST /generate-music": { prompt: "calm piano" },
        "POST /extend-music": { continue_at: 0.5, prompt: "keep going", source: { kind: "svc_music", ref: music } },
        "POST /remove-metadata": { image_base64: png },
        "POST /social-download": { url: "https://www.instagram.com/reel/Cabc/" },
      },
      uploads: { audio: { bytes: silentWav(), filename: "take.wav", contentType: "audio/wav" } },
    };
  }

  const answered = new Map<number, number>();

  async function runCase(c: FuzzCase): Promise<Failure | null> {
    let req;
    try {
      req = c.build();
    } catch (err) {
      return { id: c.id, status: "unbuildable", detail: String(err) }; // a generator bug, reported as such
    }
    await ledgerSince(); // rows of earlier cases' background work, written since the last case
    let status: number;
    let text: string;
    try {
      const request = new Request(`http://mediagate.test${req.path}`, {
        method: req.method,
        headers: { authorization: `Bearer ${key}`, "user-agent": UA, ...req.headers },
        body: req.body as BodyInit | undefined,
      });
      let timer: NodeJS.Timeout | undefined;
      const res = await Promise.race([
        Promise.resolve(app.fetch(request)),
        new Promise<never>(
          (_, reject) =>
            (timer = setTimeout(() => reject(new Error(`no answer in ${CASE_TIMEOUT_MS} ms`)), CASE_TIMEOUT_MS)),
        ),
      ]).finally(() => clearTimeout(timer));
      status = res.status;
      text = await res.text();
    } catch (err) {
      return { id: c.id, status: "threw", detail: String((err as Error)?.stack ?? err).slice(0, 400) };
    }
    const ledger = await ledgerSince();
    answered.set(status, (answered.get(status) ?? 0) + 1);
    if (LOG)
      appendFileSync(
        LOG,
        `${JSON.stringify({ backend: backend.name, id: c.id, status, ledger: ledger.kinds, answer: text.slice(0, 200) })}\n`,
      );
    if ((Object.prototype as any).polluted !== undefined || ({} as any).isAdmin !== undefined) {
      delete (Object.prototype as any).polluted;
      delete (Object.prototype as any).isAdmin;
      return { id: c.id, status, detail: "Object.prototype was polluted" };
    }
    if (status >= 500) return { id: c.id, status, detail: text.slice(0, 200) };
    if (status >= 400 && ledger.own !== 0)
      return {
        id: c.id,
        status,
        detail: `balance changed by ${ledger.own} on a ${status} (${ledger.kinds.join(", ")}): ${text.slice(0, 160)}`,
      };
    if (status < 400 && c.mustRefuse)
      return {
        id: c.id,
        status,
        detail: `accepted, but ${c.mustRefuse}${ledger.own ? ` (charged ${-ledger.own})` : ""}`,
      };
    return null;
  }

  t(
    FULL
      ? "every generated case: no 5xx, no charge on a 4xx"
      : `a seeded sample of ${SAMPLE}: no 5xx, no charge on a 4xx`,
    async () => {
      const setupStarted = performance.now();
      const fx = await fixtures();
      const setupSeconds = ((performance.now() - setupStarted) / 1000).toFixed(1);
      const all = generateCases(loadOpenApi(), fx, SEED);
      const chosen = FULL ? all : sampleCases(all, SAMPLE, SEED);
      const ops = new Set(all.map((c) => c.op));
      const statuses = new Map<string, number>();
      const failures: Failure[] = [];
      const started = performance.now();
      for (const c of chosen) {
        const failure = await runCase(c);
        if (failure) failures.push(failure);
        // Counted by status class for the summary; the exact status of a failure is in its line.
      }
      for (const f of failures) statuses.set(String(f.status), (statuses.get(String(f.status)) ?? 0) + 1);
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      console.log(
        `fuzz on ${backend.name}: seed ${SEED} (0x${SEED.toString(16)}), ${chosen.length} of ${all.length} cases over ${ops.size} operations in ${seconds}s (fixtures ${setupSeconds}s); ` +
          `answers ${[...answered]
            .sort((a, b) => a[0] - b[0])
            .map(([s, n]) => `${s}: ${n}`)
            .join(", ")}; ` +
          `${failures.length} failed${failures.length ? ` (${[...statuses].map(([s, n]) => `${s}: ${n}`).join(", ")})` : ""}`,
      );
      if (failures.length) {
        const byOp = new Map<string, Failure[]>();
        for (const f of failures) {
          const op = f.id.split(" ").slice(0, 2).join(" ");
          byOp.set(op, [...(byOp.get(op) ?? []), f]);
        }
        const lines: string[] = [];
        for (const [op, list] of byOp) {
          lines.push(`${op}: ${list.length}`);
          for (const f of list)
            lines.push(`  [${f.status}] ${f.id.slice(op.length + 1)}: ${f.detail.replace(/\s+/g, " ")}`);
        }
        // uvu prints the message, then the stack (which repeats it): the stack keeps only its frames.
        const error = new Error(
          `${failures.length} hostile request(s) answered 5xx, threw, charged on a 4xx, or were accepted against a rule of the issue (seed ${SEED}):\n${lines.join("\n")}`,
        );
        error.stack = (error.stack ?? "")
          .split("\n")
          .filter((l) => /^\s+at /.test(l))
          .join("\n");
        throw error;
      }
    },
  );

  t.run();
}
