// Caption uploads on a machine without a speech recognizer (issue 36 item 8), on every database backend: the
// boot line says which transcription providers are available; with neither pocketsphinx (here: its binary
// configured to a missing file) nor a transcription upstream, POST /captions/upload, /captions/uploads/init and
// a session's first finalize answer 503 before anything is stored or charged (balance, job rows, session rows
// and files unchanged); with an upstream configured the same requests are accepted and charged as before.
// The boot line's words for each provider are checked without a kernel (providerStatus, bootLine).
import type { Kysely } from "kysely";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Logger } from "../../core/log.ts";
import { captionsConfig } from "../../plugins/captions/config.ts";
import { CAPTION_ERRORS } from "../../plugins/captions/errors.ts";
import captions from "../../plugins/captions/index.ts";
import { bootLine, providerStatus, uploadRecognizers } from "../../plugins/captions/transcribe/index.ts";
import { locatePocketsphinx } from "../../plugins/captions/transcribe/pocketsphinx.ts";
import video from "../../plugins/video/index.ts";
import videoSandbox from "../../plugins/video/sandbox.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { createHttpApp } from "../../transports/http.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { rawPost } from "../helpers/raw-post.ts";
import { syntheticMp4 } from "./uploads-mp4.ts";

const MISSING = "/nonexistent/mediagate-test/pocketsphinx_continuous";
const UPSTREAM = "https://transcribe.example.test";
const UPLOAD_PATHS = [
  "/captions/upload",
  "/captions/uploads/init",
  "/captions/uploads/<session_id>/part/<index>",
  "/captions/uploads/<session_id>/finalize",
  "/captions/uploads/<session_id>/abort",
];

function recordingLogger(): Logger & { lines: Array<{ level: string; message: string }> } {
  const lines: Array<{ level: string; message: string }> = [];
  const at = (level: string) => (message: string) => void lines.push({ level, message });
  return { lines, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

const bootLines = (log: ReturnType<typeof recordingLogger>) =>
  log.lines.filter((l) => l.message.startsWith("captions: transcription providers:"));

// ---------------------------------------------------------------------------------------------------------
const words = suite("the boot line's words");

words("each provider's state, in the configured order, and who transcribes uploads", () => {
  const none = captionsConfig.read({ CAPTIONS_POCKETSPHINX_PATH: MISSING });
  assert.equal(
    providerStatus(none).map((p) => [p.name, p.available, p.detail]),
    [
      ["spoken", true, "our own videos' spoken records"],
      ["timed-text", true, "subtitle tracks embedded in the source"],
      ["pocketsphinx", false, `not installed: no executable ${MISSING}`],
      ["openai", false, "not configured: CAPTIONS_TRANSCRIBE_URL unset"],
    ],
  );
  assert.equal(uploadRecognizers(none), []);
  const off = bootLine(providerStatus(none));
  assert.is(off.level, "warn");
  assert.match(off.line, "No speech recognizer: POST /captions/upload and /captions/uploads/init answer 503");
  assert.match(off.line, "apt-get install pocketsphinx pocketsphinx-en-us");
  assert.match(off.line, "CAPTIONS_TRANSCRIBE_URL");

  // The upstream configured (its key never in the line), and put before pocketsphinx by the order.
  const upstream = captionsConfig.read({
    CAPTIONS_POCKETSPHINX_PATH: MISSING,
    CAPTIONS_TRANSCRIBE_URL: `${UPSTREAM}/v1`,
    CAPTIONS_TRANSCRIBE_KEY: "sk-secret-key-0123456789",
    CAPTIONS_TRANSCRIBE_ORDER: "timed-text,openai,pocketsphinx",
  });
  assert.equal(uploadRecognizers(upstream), ["openai"]);
  const on = bootLine(providerStatus(upstream));
  assert.is(on.level, "info");
  assert.is(
    on.line,
    `captions: transcription providers: timed-text available (subtitle tracks embedded in the source); openai available (${UPSTREAM}, model whisper-1); pocketsphinx unavailable (not installed: no executable ${MISSING}); spoken unavailable (left out of CAPTIONS_TRANSCRIBE_ORDER). Uploaded videos are transcribed by openai.`,
  );
  assert.not.match(on.line, "sk-secret");

  // A recognizer left out of the order does not count.
  assert.equal(
    uploadRecognizers(
      captionsConfig.read({
        CAPTIONS_TRANSCRIBE_URL: UPSTREAM,
        CAPTIONS_POCKETSPHINX_PATH: MISSING,
        CAPTIONS_TRANSCRIBE_ORDER: "spoken,timed-text",
      }),
    ),
    [],
  );
});

words("pocketsphinx where it is installed (CI installs it): found on PATH, or at the configured path", () => {
  const found = locatePocketsphinx();
  if ("missing" in found) {
    console.log(`  (pocketsphinx not installed here: ${found.missing}; skipped)`);
    return;
  }
  const byPath = captionsConfig.read({});
  assert.equal(uploadRecognizers(byPath), ["pocketsphinx"]);
  assert.match(
    bootLine(providerStatus(byPath)).line,
    `pocketsphinx available (${found.recognizer}); openai unavailable`,
  );
  assert.equal(uploadRecognizers(captionsConfig.read({ CAPTIONS_POCKETSPHINX_PATH: found.recognizer })), [
    "pocketsphinx",
  ]);
});

words.run();

// ---------------------------------------------------------------------------------------------------------
for (const backend of await databaseBackends()) {
  const t = suite(`caption uploads without a recognizer on ${backend.name}`);
  // `none`: no recognizer at all. `upstream`: the transcription upstream configured (pocketsphinx still
  // missing). On Postgres both serve one database, as two processes of one deployment would before and after
  // the operator configured the upstream, so a session opened through one is finalized through the other.
  let none: TestKernel;
  let upstream: TestKernel;
  const logs = { none: recordingLogger(), upstream: recordingLogger() };

  t.before(async () => {
    const url = backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined;
    const plugins = [videoSandbox, video, captions];
    none = await createTestKernel({
      plugins,
      databaseUrl: url,
      logger: logs.none,
      env: { CAPTIONS_POCKETSPHINX_PATH: MISSING },
    });
    upstream = await createTestKernel({
      plugins,
      databaseUrl: url,
      logger: logs.upstream,
      env: { CAPTIONS_POCKETSPHINX_PATH: MISSING, CAPTIONS_TRANSCRIBE_URL: UPSTREAM },
    });
  });
  t.after(async () => {
    await none?.close();
    await upstream?.close();
  });

  const limits = { rate_limits: Object.fromEntries(UPLOAD_PATHS.map((p) => [`POST ${p}`, 10_000])) };
  const post = (tk: TestKernel, key: string, path: string, body: BodyInit, headers: Record<string, string> = {}) =>
    rawPost(createHttpApp(tk.kernel, { adminToken: tk.adminToken }), key, path, body, headers);
  const json = (tk: TestKernel, key: string, path: string, body: unknown) =>
    post(tk, key, path, JSON.stringify(body), { "content-type": "application/json" });
  const form = (file: Uint8Array) => {
    const f = new FormData();
    f.set("video", new Blob([file as Uint8Array<ArrayBuffer>], { type: "video/mp4" }), "talk.mp4");
    return f;
  };
  /** What the account has: balance, its jobs, caption rows, sessions, and the upload files of the store. */
  const state = async (tk: TestKernel, partnerId: string) => {
    const db = tk.kernel.database.kysely as Kysely<any>;
    const count = async (table: string) =>
      Number(
        (
          await db
            .selectFrom(table)
            .select((eb) => eb.fn.countAll<number>().as("n"))
            .where("partner_id", "=", partnerId)
            .executeTakeFirstOrThrow()
        ).n,
      );
    return {
      balance: await tk.kernel.accounts.balance(partnerId),
      jobs: await count("jobs"),
      captions: await count("captions_jobs"),
      sessions: await count("captions_upload_sessions"),
      files: (await tk.kernel.blobs.keys()).filter((k) => k.startsWith("captions/private/uploads/")).length,
    };
  };

  t("the boot line of each process says which providers are available and whether uploads are transcribed", () => {
    const [off] = bootLines(logs.none);
    assert.ok(off, "the boot line");
    assert.is(off.level, "warn");
    assert.match(off.message, `pocketsphinx unavailable (not installed: no executable ${MISSING})`);
    assert.match(off.message, "openai unavailable (not configured: CAPTIONS_TRANSCRIBE_URL unset)");
    assert.match(off.message, "answer 503");
    assert.is(bootLines(logs.none).length, 1, "once per process");
    const [on] = bootLines(logs.upstream);
    assert.is(on!.level, "info");
    assert.match(on!.message, `openai available (${UPSTREAM}, model whisper-1)`);
    assert.match(on!.message, "Uploaded videos are transcribed by openai.");
  });

  t("no recognizer: the single upload and init answer 503 before any charge, storing nothing", async () => {
    const p = await none.partner({ credits: 1000, tier: "standard", limits });
    const before = await state(none, p.id);
    assert.equal(before, { balance: 1000, jobs: 0, captions: 0, sessions: 0, files: 0 });
    const single = await post(none, p.key, "/captions/upload", form(syntheticMp4(20_000, { seconds: 4 })));
    assert.is(single.status, 503, JSON.stringify(single.body));
    assert.is(single.body.error, CAPTION_ERRORS.uploadsNotConfigured);
    assert.is(single.body.error, "Captions for uploaded videos are not configured.");
    const init = await json(none, p.key, "/captions/uploads/init", { filename: "talk.mp4", size_bytes: 20_000 });
    assert.is(init.status, 503, JSON.stringify(init.body));
    assert.is(init.body.error, CAPTION_ERRORS.uploadsNotConfigured);
    assert.equal(await state(none, p.id), before);
  });

  t("an upstream configured: the same requests are accepted and charged once, as before", async () => {
    const p = await upstream.partner({ credits: 1000, tier: "standard", limits });
    const single = await post(upstream, p.key, "/captions/upload", form(syntheticMp4(20_000, { seconds: 4 })));
    assert.is(single.status, 202, JSON.stringify(single.body));
    assert.equal([single.body.status, single.body.credits_used, single.body.credits_remaining], ["pending", 25, 975]);
    const init = await json(upstream, p.key, "/captions/uploads/init", { filename: "talk.mp4", size_bytes: 20_000 });
    assert.is(init.status, 202, JSON.stringify(init.body));
    assert.equal(await state(upstream, p.id), { balance: 975, jobs: 1, captions: 1, sessions: 1, files: 1 });
  });

  if (backend.name === "postgres") {
    t(
      "a session opened while a recognizer was there: the first finalize without one is 503 and charges nothing; the session stays",
      async () => {
        const p = await upstream.partner({ credits: 1000, tier: "standard", limits });
        const file = syntheticMp4(20_000, { seconds: 4 });
        const s = (
          await json(upstream, p.key, "/captions/uploads/init", { filename: "talk.mp4", size_bytes: file.byteLength })
        ).body.session_id as string;
        assert.is(
          (
            await post(upstream, p.key, `/captions/uploads/${s}/part/0`, file as Uint8Array<ArrayBuffer>, {
              "content-type": "application/octet-stream",
            })
          ).status,
          200,
        );
        const opened = await state(upstream, p.id);
        const before = await state(none, p.id);
        const refused = await json(none, p.key, `/captions/uploads/${s}/finalize`, {});
        assert.is(refused.status, 503, JSON.stringify(refused.body));
        assert.is(refused.body.error, CAPTION_ERRORS.uploadsNotConfigured);
        assert.equal(await state(none, p.id), before);
        // Not taken by the refused finalize: the process with a recognizer finalizes it, once.
        const done = await json(upstream, p.key, `/captions/uploads/${s}/finalize`, {});
        assert.is(done.status, 202, JSON.stringify(done.body));
        assert.is(done.body.credits_remaining, 975);
        // A finalize repeated after success answers its job (200, nothing charged), recognizer or not.
        // (Its credits_remaining is that process's cached balance: these two test kernels share no pub/sub.)
        const again = await json(none, p.key, `/captions/uploads/${s}/finalize`, {});
        assert.equal([again.status, again.body.job_id], [200, done.body.job_id]);
        assert.equal(await state(upstream, p.id), { ...opened, balance: 975, jobs: 1, captions: 1 });
      },
    );
  }

  t.run();
}
