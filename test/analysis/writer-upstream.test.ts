import type { Kysely } from "kysely";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { CapabilityHost } from "../../core/plugin.ts";
import { definePlugin } from "../../core/plugin.ts";
import account from "../../plugins/account/index.ts";
import { ANALYSIS_FAILURES as F } from "../../plugins/analysis/errors.ts";
import analysis from "../../plugins/analysis/index.ts";
import { WRITER_INSTRUCTIONS } from "../../plugins/analysis/job.ts";
import captions from "../../plugins/captions/index.ts";
import social from "../../plugins/social/index.ts";
import socialSandbox from "../../plugins/social/sandbox.ts";
import text from "../../plugins/text/index.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { hostSharingRenders, newRunCache } from "../helpers/memo-engine.ts";
import { ended, pollStatus } from "../helpers/poll-status.ts";
import { chatCompletion, chatStandIn } from "../text/chat-stand-in.ts";

const AD = "https://www.tiktok.com/@shop/video/7300000000000000042";
const LIMITS = {
  inflight_jobs: 50,
  rate_limits: { "POST /analyze": 10_000, "GET /status/<job_id>": 100_000, "GET /credits": 10_000 },
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** No unpaired surrogate (String.prototype.isWellFormed, which this project's TypeScript lib does not have). */
const wellFormed = (s: string) => !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);

const renders = newRunCache();
const sharedRenders = definePlugin({
  ...socialSandbox,
  provides: {
    "social.extract": (host: CapabilityHost) =>
      socialSandbox.provides["social.extract"](hostSharingRenders(host, renders)),
  },
});

// ---------------------------------------------------------------------------------------------------------
// The chat-completions stand-in: every request answered by the current reply.
type Reply = { status: number; body: unknown } | { status: number; raw: Uint8Array };
const chat = (content: unknown, extra: Record<string, unknown> = {}): Reply => ({
  status: 200,
  body: {
    ...chatCompletion(content, "test-writer", extra),
    created: 1,
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  },
});

async function writerStandIn() {
  let reply: Reply = chat("{}");
  const api = await chatStandIn(() => reply);
  return { ...api, answer: (r: Reply) => void (reply = r) };
}

const TEXTS = {
  summary: "  A 9-second vertical TikTok ad for a bottle, with 3 cuts.  ",
  transcription: "[0:00.5] Thirsty? Meet the bottle.",
  analysis: "Hook: a question in the first second. Pacing: 3 cuts.",
  ugc_script: "0-3 s: ask the question. 3-9 s: show the bottle.",
};

for (const backend of await databaseBackends()) {
  const t = suite(`ad analysis reading the writer's answer on ${backend.name}`);
  let tk: TestKernel;
  let api: Awaited<ReturnType<typeof writerStandIn>>;
  t.before(async () => {
    api = await writerStandIn();
    tk = await createTestKernel({
      plugins: [account, captions, text, sharedRenders, social, analysis],
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
      start: true,
      // The stand-in listens on loopback: ALLOW_PRIVATE_URLS lets the outbound guard reach it.
      env: {
        SANDBOX_LATENCY_MS: "40",
        TEXT_GENERATE_URL: api.url,
        TEXT_GENERATE_KEY: "writer-key-0123456789",
        TEXT_GENERATE_MODEL: "test-writer",
        TEXT_GENERATE_TIMEOUT_MS: "20000",
        ALLOW_PRIVATE_URLS: "1",
      },
    });
  });
  t.after(async () => {
    await tk?.close();
    await api?.close();
  });

  const db = () => tk.kernel.database.kysely as Kysely<any>;
  const ledger = async (partnerId: string) =>
    (await db().selectFrom("ledger").select(["type", "amount"]).where("partner_id", "=", partnerId).execute()).map(
      (l) => `${l.type} ${Number(l.amount)}`,
    );
  /** One analysis of the ad with the stand-in answering `reply`: its final status body. */
  const analyze = async (key: string, reply: Reply) => {
    api.answer(reply);
    const sub = await tk.request("POST", "/analyze", { key, body: { url: AD } });
    assert.is(sub.status, 202, JSON.stringify(sub.body));
    const r = await pollStatus(tk, key, `/status/${sub.body.job_id}`, ended, 180_000, 100);
    return { ...r.body, request_id: undefined };
  };

  t("a good answer is read into the result; the writer is sent the instructions and the measured facts", async () => {
    const p = await tk.partner({ credits: 1000, tier: "standard", limits: LIMITS });
    const from = api.seen.length;
    const done = await analyze(p.key, chat(JSON.stringify(TEXTS)));
    assert.is(done.status, "complete", JSON.stringify(done));
    assert.equal(done.result, {
      summary: TEXTS.summary.trim(),
      transcription: TEXTS.transcription,
      analysis: TEXTS.analysis,
      ugc_script: TEXTS.ugc_script,
    });
    const [sent] = api.seen.slice(from);
    assert.ok(sent, "the writer was called");
    assert.is(sent.url, "/v1/chat/completions");
    assert.is(sent.headers.authorization, "Bearer writer-key-0123456789");
    assert.equal(
      [sent.body.model, sent.body.temperature, sent.body.response_format],
      ["test-writer", 0, { type: "json_object" }],
    );
    assert.equal(
      sent.body.messages.map((m: any) => m.role),
      ["system", "user"],
    );
    assert.is(sent.body.messages[0].content, WRITER_INSTRUCTIONS);
    const facts = JSON.parse(sent.body.messages[1].content);
    assert.is(facts.platform, "tiktok");
    assert.ok(facts.duration_seconds > 0 && facts.has_audio === true, JSON.stringify(facts).slice(0, 200));
    assert.is(await tk.kernel.accounts.balance(p.id), 950);
    assert.equal(await ledger(p.id), ["purchase 1000", "usage -50"]);
  });

  t("NULs and broken Unicode in the texts are cleaned out before they are stored; the analysis completes", async () => {
    const p = await tk.partner({ credits: 1000, tier: "standard", limits: LIMITS });
    // NUL and a lone surrogate written as escapes inside the JSON text, a raw NUL and C1 control around them.
    const content = `{"summary":"Bold\\u0000 hook\\ud800 first.","transcription":"[0:00.5] Hi\u0000 there","analysis":"Pacing\u0085 is fast.","ugc_script":"0-3 s: wave."}`;
    const done = await analyze(p.key, chat(content));
    assert.is(done.status, "complete", JSON.stringify(done));
    for (const [field, value] of Object.entries(done.result as Record<string, string>)) {
      assert.not.match(value, /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/, field);
      assert.ok(wellFormed(value), field);
    }
    // The lone surrogate becomes U+FFFD (lib/upstream-text.ts), the NULs and the C1 control go.
    assert.is(done.result.summary, "Bold hook\ufffd first.");
    assert.is(done.result.analysis, "Pacing is fast.");
    assert.is(done.result.transcription, "[0:00.5] Hi there");
    assert.is(done.result.ugc_script, "0-3 s: wave.");
    // A body with bytes that are not UTF-8 inside a text: read with replacement characters, stored well formed.
    const bytes = Buffer.concat([
      Buffer.from(
        JSON.stringify((chat(JSON.stringify({ ...TEXTS, summary: "XX" })) as { body: unknown }).body).replace(
          "XX",
          "Caf__",
        ),
      ),
      Buffer.alloc(0),
    ]);
    const raw = new Uint8Array(bytes);
    const at = bytes.indexOf("Caf__") + 3;
    raw[at] = 0xff;
    raw[at + 1] = 0xc3;
    const broken = await analyze(p.key, { status: 200, raw });
    assert.is(broken.status, "complete", JSON.stringify(broken));
    assert.ok(broken.result.summary.startsWith("Caf") && wellFormed(broken.result.summary), broken.result.summary);
    assert.is(await tk.kernel.accounts.balance(p.id), 900);
  });

  t("an answer that is not four non-empty texts ends in error with its sentence, refunded exactly once", async () => {
    const p = await tk.partner({ credits: 1000, tier: "standard", limits: LIMITS });
    const { summary, ...three } = TEXTS;
    const cases: Array<[string, Reply]> = [
      ["a field missing", chat(JSON.stringify(three))],
      ["a field not a string", chat(JSON.stringify({ ...TEXTS, analysis: 42 }))],
      ["a field empty", chat(JSON.stringify({ ...TEXTS, ugc_script: "   " }))],
      ["a field of NULs only", chat(JSON.stringify({ ...TEXTS, summary: "\u0000\u0000" }))],
      ["a JSON array", chat(JSON.stringify([summary, TEXTS.transcription, TEXTS.analysis, TEXTS.ugc_script]))],
      ["not JSON", chat("Here is your analysis: the hook is strong.")],
      ["empty content", chat("")],
      ["NULs only", chat("\u0000\u0000\u0000")],
      ["no content at all", chat(null)],
      ["cut off", chat(JSON.stringify(TEXTS).slice(0, 40), { finish_reason: "length" })],
      ["HTTP 500", { status: 500, body: { error: { message: "the model is overloaded" } } }],
      ["not the API's JSON", { status: 200, raw: new Uint8Array([0x3c, 0x68, 0x74, 0x6d, 0x6c, 0x3e, 0xff, 0x00]) }],
    ];
    for (const [what, reply] of cases) {
      const done = await analyze(p.key, reply);
      assert.equal(
        done,
        { request_id: undefined, job_id: done.job_id, status: "error", message: F.analyze, error: F.analyze },
        what,
      );
      assert.is(await tk.kernel.accounts.balance(p.id), 1000, `${what}: refunded`);
    }
    // Give a late second refund the chance to show before counting.
    await sleep(300);
    const lines = await ledger(p.id);
    assert.is(lines.filter((l) => l.startsWith("usage -50")).length, cases.length);
    assert.is(lines.filter((l) => l.startsWith("refund 50")).length, cases.length);
    assert.is(await tk.kernel.accounts.balance(p.id), 1000);
  });

  t.run();
}
