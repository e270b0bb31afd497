// Ad analysis through the REST API and GraphQL on every database backend: every validation rule answers before
// a charge and leaves nothing behind; an analysis goes through every state in order and its texts hold the
// figures measured independently here (duration, cuts, words per minute, the first words); a failure at each
// stage is refunded exactly once; the social download quota is untouched; ownership, ids, list and costs.
import type { Kysely } from "kysely";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { KERNEL_ERRORS } from "../../lib/errors.ts";
import { createMediaEngine } from "../../lib/media/index.ts";
import account from "../../plugins/account/index.ts";
import { ANALYSIS_ERRORS, ANALYSIS_FAILURES } from "../../plugins/analysis/errors.ts";
import analysis from "../../plugins/analysis/index.ts";
import captions from "../../plugins/captions/index.ts";
import social from "../../plugins/social/index.ts";
import socialSandbox, { sandboxPlan } from "../../plugins/social/sandbox.ts";
import { adPlan, makeSandboxAd } from "../../plugins/social/sandbox-ad.ts";
import text from "../../plugins/text/index.ts";
import video from "../../plugins/video/index.ts";
import videoSandbox from "../../plugins/video/sandbox.ts";
import { graphqlSubscription, type TestKernel } from "../../testkit/index.ts";
import { databaseBackends, redisUrl } from "../helpers/backends.ts";
import { errorBody } from "../helpers/error-body.ts";
import { suiteKernel } from "../helpers/kernel-suite.ts";
import { balance as balanceOf } from "../helpers/partner-reads.ts";
import { ended, pollStatus } from "../helpers/poll-status.ts";
import { rowCount } from "../helpers/row-count.ts";

const LIMITS = {
  inflight_jobs: 50,
  rate_limits: {
    "POST /analyze": 10_000,
    "GET /status/<job_id>": 100_000,
    "GET /analyses": 10_000,
    "GET /credits": 10_000,
  },
};
const TIKTOK = "https://www.tiktok.com/@shop/video/7300000000000000001";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const backend of await databaseBackends()) {
  const t = suite(`ad analysis on ${backend.name}`);
  const tk = suiteKernel(t, backend, {
    plugins: [account, videoSandbox, video, captions, text, socialSandbox, social, analysis],
    redisUrl: backend.name === "postgres" ? await redisUrl() : undefined,
    start: true,
    env: { SANDBOX_LATENCY_MS: "40", PUBLIC_URL: "https://media.example.test" },
  });

  const partner = (opts: Parameters<TestKernel["partner"]>[0] = {}) => tk.partner({ limits: LIMITS, ...opts });
  const balance = (key: string) => balanceOf(tk, key);
  const db = () => tk.kernel.database.kysely as Kysely<any>;
  const rows = (partnerId: string) => rowCount(tk, "analyses", partnerId);
  const ledger = (partnerId: string) =>
    db().selectFrom("ledger").select(["amount", "type"]).where("partner_id", "=", partnerId).execute();
  const finished = async (key: string, id: string) => (await pollStatus(tk, key, `/status/${id}`, ended, 180_000)).body;

  t("every validation rule answers before a charge and leaves nothing behind", async () => {
    const { id, key } = await partner({ credits: 500 });
    const refused: Array<[unknown, string]> = [
      [{}, ANALYSIS_ERRORS.urlMissing],
      [{ url: "" }, ANALYSIS_ERRORS.urlMissing],
      [{ url: "   " }, ANALYSIS_ERRORS.urlMissing],
      [{ url: 42 }, ANALYSIS_ERRORS.urlMissing],
      [{ url: ["https://www.tiktok.com/@a/video/1"] }, ANALYSIS_ERRORS.urlMissing],
      [{ url: "https://m.instagram.com/p/abc/" }, ANALYSIS_ERRORS.invalidUrl],
      [{ url: "https://vt.tiktok.com/ZSabc/" }, ANALYSIS_ERRORS.invalidUrl],
      [{ url: "https://fb.watch/abc/" }, ANALYSIS_ERRORS.invalidUrl],
      [{ url: "https://mbasic.facebook.com/reel/1" }, ANALYSIS_ERRORS.invalidUrl],
      [{ url: "https://library.tiktok.com/ads/detail/?ad_id=1" }, ANALYSIS_ERRORS.invalidUrl],
      [{ url: "https://tiktok.com.evil.test/@a/video/1" }, ANALYSIS_ERRORS.invalidUrl],
      [{ url: "https://eviltiktok.com/@a/video/1" }, ANALYSIS_ERRORS.invalidUrl],
      [{ url: "https://user:pw@www.tiktok.com/@a/video/1" }, ANALYSIS_ERRORS.invalidUrl],
      [{ url: "https://user@www.facebook.com/ads/library/?id=1" }, ANALYSIS_ERRORS.invalidUrl],
      [{ url: "https://www.tіktok.com/@a/video/1" }, ANALYSIS_ERRORS.invalidUrl], // Cyrillic і
      [{ url: "https://xn--www-tktok-xyz.com/@a/video/1" }, ANALYSIS_ERRORS.invalidUrl],
      [{ url: "https://www.tiktok.com:8443/@a/video/1" }, ANALYSIS_ERRORS.invalidUrl],
      [{ url: "ftp://www.tiktok.com/@a/video/1" }, ANALYSIS_ERRORS.invalidUrl],
      [{ url: "javascript:alert(1)" }, ANALYSIS_ERRORS.invalidUrl],
      [{ url: `https://www.tiktok.com/${"a".repeat(600)}` }, ANALYSIS_ERRORS.invalidUrl],
      [{ url: "12ab34" }, ANALYSIS_ERRORS.invalidUrl],
      [{ url: TIKTOK, partner_job_id: "bad id!" }, KERNEL_ERRORS.invalidPartnerJobId],
      [{ url: TIKTOK, partner_job_id: "x".repeat(65) }, KERNEL_ERRORS.invalidPartnerJobId],
      [{ url: TIKTOK, partner_job_id: 7 }, KERNEL_ERRORS.invalidPartnerJobId],
    ];
    for (const [body, error] of refused) {
      const r = await tk.request("POST", "/analyze", { key, body });
      assert.is(r.status, 400, JSON.stringify(body));
      assert.equal(errorBody(r), { error }, JSON.stringify(body));
    }
    for (const raw of ["not json", "[1,2]", '"https://www.tiktok.com/@a/video/1"', '{"url": "x"', "null"]) {
      const r = await tk.request("POST", "/analyze", {
        key,
        body: raw,
        headers: { "content-type": "application/json" },
      });
      assert.is(r.status, 400, raw);
      assert.equal(errorBody(r), { error: KERNEL_ERRORS.bodyNotJson }, raw);
    }
    // A body that is not JSON at all: the spec gives this endpoint its own 400 (part 1, Errors: "POST /analyze
    // | 400 | `Request body must be JSON`"), where other endpoints answer the kernel's 415.
    const notJson: Array<[string, string]> = [
      ["text/plain", TIKTOK],
      ["application/x-www-form-urlencoded", `url=${encodeURIComponent(TIKTOK)}`],
      [
        "multipart/form-data; boundary=x",
        `--x\r\nContent-Disposition: form-data; name="url"\r\n\r\n${TIKTOK}\r\n--x--\r\n`,
      ],
    ];
    for (const [type, raw] of notJson) {
      const r = await tk.request("POST", "/analyze", { key, body: raw, headers: { "content-type": type } });
      assert.is(r.status, 400, `${type}: ${JSON.stringify(r.body)}`);
      assert.equal(errorBody(r), { error: "Request body must be JSON" }, type);
    }
    const elsewhere = await tk.request("POST", "/generate-video", {
      key,
      body: "a prompt",
      headers: { "content-type": "text/plain" },
    });
    assert.is(elsewhere.status, 415, "other endpoints keep the kernel's 415");
    const poor = await partner({ credits: 54 });
    const r = await tk.request("POST", "/analyze", { key: poor.key, body: { url: TIKTOK } });
    assert.is(r.status, 402);
    assert.is(r.body.error, "Insufficient credits");
    assert.is(await balance(key), 500);
    assert.is(await balance(poor.key), 54);
    assert.is(await rows(id), 0);
    assert.is(await rows(poor.id), 0);
    assert.equal(
      (await ledger(id)).map((l) => l.type),
      ["purchase"],
    );
  });

  t("the hosts of each network the spec names, and a numeric ad id, are accepted", async () => {
    const { key } = await partner({ credits: 10_000 });
    for (const url of [
      "https://facebook.com/ads/library/?id=123456",
      "https://www.facebook.com/watch/?v=1",
      "https://m.facebook.com/reel/9",
      "https://instagram.com/reel/Cabc/",
      "https://www.instagram.com/p/Cabc/",
      "https://tiktok.com/@a/video/1",
      "https://vm.tiktok.com/ZMabc/",
      "www.tiktok.com/@a/video/2",
      "1234567890123",
    ]) {
      const r = await tk.request("POST", "/analyze", { key, body: { url, partner_job_id: "ad-1/a_b" } });
      assert.is(r.status, 202, `${url}: ${JSON.stringify(r.body)}`);
      assert.equal(Object.keys(r.body).sort(), ["credits_remaining", "credits_used", "job_id", "request_id", "status"]);
      assert.is(r.body.status, "queued");
      assert.is(r.body.credits_used, 55);
      assert.match(r.body.job_id, /^svc-[0-9a-f]{8}$/);
    }
  });

  t("an analysis moves through every state in order, and its texts hold the figures measured on the ad", async () => {
    const { key } = await partner({ credits: 1000 });
    const sub = await tk.request("POST", "/analyze", { key, body: { url: TIKTOK, partner_job_id: "campaign-7" } });
    assert.is(sub.status, 202, JSON.stringify(sub.body));
    assert.is(sub.body.credits_remaining, 945);
    const id = sub.body.job_id;
    const states: string[] = [];
    const messages: string[] = [];
    for await (const r of graphqlSubscription(
      tk,
      "subscription($id: String!) { jobUpdates(id: $id) { state terminal message progress } }",
      { id },
      { key },
    )) {
      const u = r.data.jobUpdates;
      if (states.at(-1) !== u.state) states.push(u.state);
      messages.push(u.message);
      if (u.terminal) break;
    }
    // The subscription may start after the job left `queued`; from there on, every state once, in order.
    const order = ["queued", "downloading", "extracting_frames", "transcribing", "analyzing", "complete"];
    assert.equal(states, order.slice(order.indexOf(states[0]!)), JSON.stringify(states));
    assert.ok(states.includes("downloading") || states[0] === "extracting_frames", JSON.stringify(states));

    const done = await finished(key, id);
    assert.equal(Object.keys(done).sort(), ["job_id", "request_id", "result", "status"]);
    assert.is(done.status, "complete");
    const { summary, transcription, analysis: written, ugc_script } = done.result;
    for (const s of [summary, transcription, written, ugc_script]) assert.ok(typeof s === "string" && s.length > 20, s);

    // The same ad, made again here (the sandbox is deterministic) and measured without the plugin: its length
    // by ffprobe, its words and their times from the speech record, its cuts from the plan.
    const plan = sandboxPlan(TIKTOK, "tiktok");
    const engine = createMediaEngine({ mode: "native" });
    try {
      const ad = await makeSandboxAd(engine, {
        seed: `${TIKTOK}#0`,
        seconds: plan.seconds[0]!,
        width: plan.width,
        height: plan.height,
        title: plan.title,
        audio: true,
      });
      const seconds = (await engine.probe(ad.video, "ad.mp4")).durationSeconds;
      const words = ad.spoken!.words;
      const wpm = Math.round((words.length / (words.at(-1)!.end - words[0]!.start)) * 60);
      const cuts = adPlan(`${TIKTOK}#0`, plan.seconds[0]!).shots.length - 1;
      assert.ok(
        summary.includes(`A ${Math.round(seconds * 10) / 10}-second vertical tiktok ad (288x512) with ${cuts} cuts`),
        summary,
      );
      assert.ok(summary.includes(`${wpm} words per minute`), summary);
      const firstWords = words
        .slice(0, 3)
        .map((w) => w.text)
        .join(" ");
      assert.ok(
        summary.includes(firstWords) &&
          transcription.startsWith(`[0:00.${String(Math.floor(words[0]!.start * 10))}] ${firstWords}`),
        `${firstWords} | ${transcription}`,
      );
      assert.ok(written.includes(`Voice: ${wpm} words per minute`), written);
      assert.ok(written.includes(`Pacing: ${cuts} cuts in`), written);
      assert.ok(written.includes("LUFS"), written);
      // The shots' colours the plan chose are the colours measured, in order.
      const shotColours = adPlan(`${TIKTOK}#0`, plan.seconds[0]!)
        .shots.map((s) => s.name)
        .join(" -> ");
      assert.ok(written.includes(`leading colour goes ${shotColours}`), `${shotColours} | ${written}`);
      const call = ad.plan.call;
      assert.ok(written.includes(`Call to action: "${call}"`), written);
      assert.ok(
        ugc_script.startsWith(`UGC script, ${Math.round(seconds * 10) / 10} seconds, vertical 288x512`),
        ugc_script,
      );
      assert.ok(ugc_script.includes(`"${call}"`), ugc_script);
    } finally {
      await engine.close();
    }

    // The record in the list, and the social downloader never counted it.
    const list = await tk.request("GET", "/analyses", { key });
    assert.is(list.status, 200);
    assert.equal(list.body.analyses[0], {
      job_id: id,
      partner_job_id: "campaign-7",
      status: "complete",
      credits_used: 55,
      created_at: list.body.analyses[0].created_at,
      result: done.result,
    });
    assert.match(list.body.analyses[0].created_at, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    const downloads = await tk.request("GET", "/social-downloads", { key });
    assert.is(downloads.body.total, 0);
    const quota = await tk.request("POST", "/social-download", {
      key,
      body: { url: "https://www.tiktok.com/@a/video/99" },
    });
    assert.is(quota.body.quota.used, 1, JSON.stringify(quota.body));
  });

  t("a failure at each stage ends in error with its sentence and is refunded exactly once", async () => {
    const { id: partnerId, key } = await partner({ credits: 1000 });
    const cases: Array<[string, string, string]> = [
      ["https://www.tiktok.com/@a/video/sandbox-fail", ANALYSIS_FAILURES.download.failed, "downloading"],
      ["https://www.tiktok.com/@a/video/sandbox-login", ANALYSIS_FAILURES.download.login_required, "downloading"],
      ["https://www.instagram.com/reel/sandbox-frames-fail/", ANALYSIS_FAILURES.frames, "extracting_frames"],
      ["https://www.facebook.com/reel/sandbox-transcribe-fail", ANALYSIS_FAILURES.transcribe, "transcribing"],
      ["https://vm.tiktok.com/sandbox-analyze-fail/", ANALYSIS_FAILURES.analyze, "analyzing"],
    ];
    for (const [url, sentence, stage] of cases) {
      const sub = await tk.request("POST", "/analyze", { key, body: { url } });
      assert.is(sub.status, 202, JSON.stringify(sub.body));
      const reached: string[] = [];
      for await (const r of graphqlSubscription(
        tk,
        "subscription($id: String!) { jobUpdates(id: $id) { state terminal } }",
        { id: sub.body.job_id },
        { key },
      )) {
        reached.push(r.data.jobUpdates.state);
        if (r.data.jobUpdates.terminal) break;
      }
      assert.is(reached.at(-1), "error", url);
      // The failing stage was reached; the sentence below says which stage failed. (Not "the state before the
      // error": on a loaded machine an attempt's heartbeat can lapse, and the retry republishes earlier stages.)
      assert.ok(reached.includes(stage), `${url}: ${JSON.stringify(reached)}`);
      const done = await finished(key, sub.body.job_id);
      assert.equal(
        done,
        { request_id: done.request_id, job_id: sub.body.job_id, status: "error", message: sentence, error: sentence },
        url,
      );
    }
    // Give a late second refund the chance to show before counting.
    await sleep(300);
    assert.is(await balance(key), 1000);
    const lines = await ledger(partnerId);
    assert.is(lines.filter((l) => l.type === "usage").length, cases.length);
    assert.is(lines.filter((l) => l.type === "refund").length, cases.length);
  });

  t("another account's analysis is 404, a malformed id 400, and the list pages newest first", async () => {
    const a = await partner({ credits: 1000 });
    const b = await partner({ credits: 1000 });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      tk.clock.advance(1000);
      ids.push(
        (await tk.request("POST", "/analyze", { key: a.key, body: { url: `https://www.tiktok.com/@a/video/${i}` } }))
          .body.job_id,
      );
    }
    assert.equal(await tk.request("GET", `/status/${ids[0]}`, { key: b.key }).then((r) => [r.status, errorBody(r)]), [
      404,
      { error: ANALYSIS_ERRORS.jobNotFound },
    ]);
    assert.equal(
      await tk.request("GET", "/status/svc-00000000", { key: a.key }).then((r) => [r.status, errorBody(r)]),
      [404, { error: ANALYSIS_ERRORS.jobNotFound }],
    );
    for (const bad of ["123", "svc-XYZ", "svc-0000000g", "svc-000000000", "%00", "svc-0000000%00"]) {
      const r = await tk.request("GET", `/status/${bad}`, { key: a.key });
      assert.is(r.status, 400, bad);
      assert.equal(errorBody(r), { error: ANALYSIS_ERRORS.invalidJobId }, bad);
    }
    const running = await tk.request("GET", `/status/${ids[2]}`, { key: a.key });
    assert.ok(
      ["queued", "downloading", "extracting_frames", "transcribing", "analyzing", "complete"].includes(
        running.body.status,
      ),
      JSON.stringify(running.body),
    );
    if (running.body.status !== "complete")
      assert.equal(Object.keys(running.body).sort(), ["job_id", "message", "request_id", "status"]);
    const page = await tk.request("GET", "/analyses?limit=2", { key: a.key });
    assert.equal([page.body.total, page.body.limit, page.body.offset], [3, 2, 0]);
    assert.equal(
      page.body.analyses.map((x: any) => x.job_id),
      [ids[2], ids[1]],
    );
    const clamped = await tk.request("GET", "/analyses?limit=500&offset=2", { key: a.key });
    assert.equal([clamped.body.limit, clamped.body.analyses.map((x: any) => x.job_id)], [50, [ids[0]]]);
    assert.is((await tk.request("GET", "/analyses", { key: a.key })).body.limit, 20);
    assert.is((await tk.request("GET", "/analyses", { key: b.key })).body.total, 0);
    for (const id of ids) await finished(a.key, id);
  });

  t("GET /credits lists analysis and text_analysis, and the in-flight cap and rate limit hold", async () => {
    // POST /analyze keeps the spec's 20 a minute; the status polls do not spend it (a slow machine polls more).
    const { key } = await tk.partner({
      credits: 1000,
      limits: { inflight_jobs: 1, rate_limits: { "GET /status/<job_id>": 100_000 } },
    });
    const credits = await tk.request("GET", "/credits", { key });
    assert.is(credits.body.credit_cost_per_analysis, 50);
    assert.is(credits.body.costs.analysis, 50);
    assert.is(credits.body.costs.text_analysis, 5);
    const first = await tk.request("POST", "/analyze", { key, body: { url: TIKTOK } });
    assert.is(first.status, 202);
    // The first holds the only slot: its download alone takes longer than this next call.
    const second = await tk.request("POST", "/analyze", { key, body: { url: TIKTOK } });
    assert.is(second.status, 429);
    assert.equal(errorBody(second), {
      error: "Too many in-flight jobs for this partner. Wait for some to finish and retry.",
    });
    await finished(key, first.body.job_id);
    // 20 a minute: the 21st call is a 429, whatever its body (these are refused bodies: nothing is charged).
    let status = 0;
    for (let i = 0; i < 21; i++) status = (await tk.request("POST", "/analyze", { key, body: {} })).status;
    assert.is(status, 429);
  });

  t.run();
}
