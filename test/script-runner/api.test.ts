// The Script Runner through the REST API on every database backend: every price row of the table on two tiers
// (read from 402 answers, so nothing renders for them), a run with one failing scene ending `partial` with
// exactly that scene's part refunded, a character drawn from a description (one more frame), frames probed as
// 9:16 PNGs and clips of the model's length, the views, the in-flight cap, and every refusal before a charge.

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createMediaEngine } from "../../lib/media/index.ts";
import { RUNNER_ERRORS } from "../../plugins/script-runner/errors.ts";
import { LIMITS as RUNNER_LIMITS } from "../../plugins/script-runner/limits.ts";
import { VIDEO_MODELS } from "../../plugins/script-runner/prices.ts";
import type { TestKernel } from "../../testkit/index.ts";
import { assertAnswer, assertFields } from "../helpers/assert.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { testKernel } from "../helpers/kernel-suite.ts";
import { ledgerAmounts } from "../helpers/ledger-amounts.ts";
import { ledgerSum } from "../helpers/partner-reads.ts";
import { png, runEnd, runnerOptions } from "./helpers.ts";

const engine = createMediaEngine({ mode: "native" });
const LIMITS = {
  inflight_jobs: 50,
  rate_limits: {
    "POST /script-runner": 10_000,
    "GET /script-runner/<job_id>": 100_000,
    "GET /script-runner": 10_000,
    "GET /credits": 10_000,
  },
};

const script = (scenes: string[], character?: string) =>
  [
    character ? `=== CHARACTER ===\n${character}` : "",
    ...scenes.map((s, i) => `=== SCENE: Scene ${i + 1} ===\n${s}\n=== DIALOGUE ${i + 1} ===\nLine ${i + 1}.`),
  ].join("\n");

for (const backend of await databaseBackends()) {
  const t = suite(`script runner on ${backend.name}`);
  const tk = testKernel(t, backend, runnerOptions({ ALLOW_PRIVATE_URLS: "1" }));
  const partner = (opts: Parameters<TestKernel["partner"]>[0] = {}) => tk.partner({ limits: LIMITS, ...opts });
  const done = (key: string, id: string) => runEnd(tk, key, id);
  const blob = (url: string) => tk.kernel.blobs.get(new URL(url).pathname.slice("/media/".length));

  t(
    "every price row on two tiers: cost_per_scene x scenes, one more frame for a drawn character, the tier once",
    async () => {
      const plus = await partner({ credits: 0 });
      const std = await partner({ credits: 0, tier: "standard" });
      const asked = async (key: string, body: Record<string, unknown>) => {
        const r = await tk.request("POST", "/script-runner", { key, body });
        assert.is(r.status, 402, JSON.stringify(r.body));
        return Number(/^Insufficient credits\. Need (\d+) credits\.$/.exec(r.body.error)![1]);
      };
      const rows: Array<[string, number]> = [
        ["gamma-3.1-fast", 55],
        ["gamma-3.1-quality", 164],
        ["alpha-v3-text-to-video", 114],
        ["beta-2-direct", 159],
        ["beta-2-5", 239],
      ];
      for (const [model, cps] of rows) {
        for (const [imageModel, extra] of [
          ["image-a-pro", 0],
          ["image-b-2", 10],
        ] as const) {
          const body = {
            prompt: script(["a", "b"]),
            model,
            image_model: imageModel,
            character_image_base64: png([9, 9, 9]),
          };
          assert.is(await asked(std.key, body), 2 * (cps + extra), `${model} ${imageModel} standard`);
          assert.is(
            await asked(plus.key, body),
            Math.ceil((2 * (cps + extra) * 11) / 10),
            `${model} ${imageModel} api_plus10`,
          );
        }
      }
      // The spec's example: api_plus10, two scenes, default model: 121.
      assert.is(await asked(plus.key, { prompt: script(["a", "b"]), character_image_base64: png([1, 1, 1]) }), 121);
      // A CHARACTER block (no image) costs one more frame: (2 x 55 + 14) standard, ceil(124 x 1.1) = 137.
      assert.is(await asked(std.key, { prompt: script(["a", "b"], "A tall sailor") }), 124);
      assert.is(await asked(plus.key, { prompt: script(["a", "b"], "A tall sailor") }), 137);
      // An image and a block: the image wins, the block costs nothing.
      assert.is(
        await asked(std.key, { prompt: script(["a", "b"], "A tall sailor"), character_image_base64: png([1, 1, 1]) }),
        110,
      );
    },
  );

  t(
    "one failing scene: partial, exactly its part refunded once; frames 9:16 PNG, clips of the model's length",
    async () => {
      const { key, id } = await partner({ credits: 1000 });
      const res = await tk.request("POST", "/script-runner", {
        key,
        body: {
          prompt: script(["A harbour at dawn.", "A storm [sandbox:fail]", "Calm sea."]),
          character_image_base64: png([200, 40, 40]),
          name: "Voyage",
          partner_job_id: "run-1",
        },
      });
      assertAnswer(
        res,
        202,
        "cost_per_scene credits_remaining credits_used image_model job_id model partner_job_id request_id scene_count status",
      );
      // 3 x 55 = 165 standard, ceil(181.5) = 182 on api_plus10; a failed scene refunds its standard-basis share,
      // 55 (spec part 3), not a third of the tiered total.
      assert.equal(
        [
          res.body.status,
          res.body.scene_count,
          res.body.credits_used,
          res.body.cost_per_scene,
          res.body.model,
          res.body.image_model,
        ],
        ["processing", 3, 182, 55, "gamma-3.1-fast", "image-a-pro"],
      );
      const run = await done(key, res.body.job_id);
      assert.is(run.status, "partial", JSON.stringify(run));
      assert.equal(
        run.scenes.map((s: any) => s.status),
        ["complete", "error", "complete"],
      );
      assert.is(run.scenes_complete, 2);
      assert.is(run.credits_charged, 182);
      assert.is(run.credits_refunded, 55);
      assert.is(run.scenes[1].error, RUNNER_ERRORS.sceneFailed);
      assert.is(run.scenes[1].video_url, undefined);
      assert.equal(
        [run.name, run.partner_job_id, run.model, run.image_model],
        ["Voyage", "run-1", "gamma-3.1-fast", "image-a-pro"],
      );
      assert.is(run.scenes[0].setting, "A harbour at dawn.");
      assert.is(run.scenes[0].dialogue, "Line 1.");
      const frame = await blob(run.scenes[0].start_image_url);
      const fp = await engine.probe(frame!, "f.png");
      assert.equal([fp.streams[0]?.codec, fp.streams[0]?.width, fp.streams[0]?.height], ["png", 720, 1280]);
      const clip = await engine.probe((await blob(run.scenes[2].video_url))!, "c.mp4");
      assert.ok(
        Math.abs(clip.durationSeconds - VIDEO_MODELS["gamma-3.1-fast"].seconds) < 0.2,
        String(clip.durationSeconds),
      );
      assert.equal(await ledgerAmounts(tk, { jobIds: [res.body.job_id], type: "refund" }), [55]);
      assert.is(await ledgerSum(tk, id), 1000 - 182 + 55);

      const list = await tk.request("GET", "/script-runner", { key });
      assert.equal([list.body.total, list.body.limit, list.body.offset], [1, 20, 0]);
      assertFields(
        list.body.runs[0],
        "created_at credits_charged credits_refunded image_model_used job_id model_used name partner_job_id scene_count status updated_at",
      );
      assert.equal(
        [list.body.runs[0].model_used, list.body.runs[0].status, list.body.runs[0].credits_refunded],
        ["gamma-3.1-fast", "partial", 55],
      );
    },
  );

  t("a character drawn from its description; every scene failing ends error with everything refunded", async () => {
    const { key, id } = await partner({ credits: 1000, tier: "standard" });
    const drawn = await tk.request("POST", "/script-runner", {
      key,
      body: {
        prompt: script(["Dawn."], "A tall sailor with a red scarf"),
        model: "beta-2-direct",
        use_as_character_reference: false,
      },
    });
    assert.is(drawn.status, 202, JSON.stringify(drawn.body));
    assert.is(drawn.body.credits_used, 159 + 14);
    const ok = await done(key, drawn.body.job_id);
    assert.is(ok.status, "complete");
    const clip = await engine.probe((await blob(ok.scenes[0].video_url))!, "c.mp4");
    assert.ok(Math.abs(clip.durationSeconds - 5) < 0.2, String(clip.durationSeconds));
    const failed = await tk.request("POST", "/script-runner", {
      key,
      body: { prompt: script(["x [sandbox:fail]", "y [sandbox:fail]"], "Someone") },
    });
    const end = await done(key, failed.body.job_id);
    assert.is(end.status, "error");
    assert.is(end.credits_refunded, end.credits_charged);
    assert.is(end.error, RUNNER_ERRORS.runFailed);
    assert.is(await ledgerSum(tk, id), 1000 - 173);
  });

  t(
    "scene refunds are standard-basis shares: the tier's part only with the whole run; capped at the charge",
    async () => {
      const refundsOf = (jobId: string) => ledgerAmounts(tk, { jobIds: [jobId], type: "refund" });
      // The spec's example, api_plus10, two scenes on the default model: billed 121, cost_per_scene 55. Both fail:
      // each scene returns its 55 as it fails, and the run's end (error) the tier's 11.
      const plus = await partner({ credits: 1000 });
      const both = await tk.request("POST", "/script-runner", {
        key: plus.key,
        body: { prompt: script(["x [sandbox:fail]", "y [sandbox:fail]"]), character_image_base64: png([9, 9, 9]) },
      });
      assert.equal(
        [both.status, both.body.credits_used, both.body.cost_per_scene],
        [202, 121, 55],
        JSON.stringify(both.body),
      );
      const failed = await done(plus.key, both.body.job_id);
      assert.equal([failed.status, failed.credits_charged, failed.credits_refunded], ["error", 121, 121]);
      assert.equal(await refundsOf(both.body.job_id), [55, 55, 11]);
      assert.is(await ledgerSum(tk, plus.id), 1000);

      // A custom rate below the standard (30 a scene against 55): the standard shares (110) would exceed the 60
      // charged, so the charge is split over the scenes instead, and a failed scene returns 30.
      const custom = await partner({ credits: 1000, tier: "custom" });
      await tk.kernel.accounts.update(custom.id, {
        customRates: { script_runner: { scene: { "gamma-3.1-fast": { "image-a-pro": 30 } } } },
      } as any);
      const cheap = await tk.request("POST", "/script-runner", {
        key: custom.key,
        body: { prompt: script(["Dawn.", "z [sandbox:fail]"]), character_image_base64: png([9, 9, 9]) },
      });
      assert.equal([cheap.status, cheap.body.credits_used], [202, 60], JSON.stringify(cheap.body));
      const partial = await done(custom.key, cheap.body.job_id);
      assert.equal([partial.status, partial.credits_refunded], ["partial", 30]);
      assert.equal(await refundsOf(cheap.body.job_id), [30]);
      assert.is(await ledgerSum(tk, custom.id), 1000 - 60 + 30);
    },
  );

  t("refusals before any charge; another account's run is 404; counted in the in-flight cap", async () => {
    const server = createServer((req, res) =>
      req.url === "/face.png"
        ? res.writeHead(200).end(Buffer.from(png([1, 2, 3]), "base64"))
        : res.writeHead(200).end("text"),
    );
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const { key, id } = await partner({ credits: 1000 });
      const img = png([1, 2, 3]);
      const ok = script(["a"]);
      const cases: Array<[unknown, number, string | RegExp, Record<string, unknown>?]> = [
        [{}, 400, RUNNER_ERRORS.promptRequired],
        [{ prompt: "no scenes", character_image_base64: img }, 400, RUNNER_ERRORS.noScenes],
        [{ prompt: "=== SCENE: A ===\nx", character_image_base64: img }, 400, RUNNER_ERRORS.noDialogue],
        [
          {
            prompt: `${Array.from({ length: 21 }, (_, i) => `=== SCENE: ${i} ===\nx`).join("\n")}\n=== DIALOGUE 1 ===\nhi`,
            character_image_base64: img,
          },
          400,
          RUNNER_ERRORS.tooManyScenes,
        ],
        [{ prompt: ok }, 400, RUNNER_ERRORS.noCharacter],
        // Over the prompt cap by one character, with a valid script inside it: refused before it is parsed.
        [
          { prompt: ok + " ".repeat(RUNNER_LIMITS.promptChars + 1 - ok.length), character_image_base64: img },
          400,
          RUNNER_ERRORS.promptTooLong,
        ],
        [
          { prompt: ok, model: "gamma-9" },
          400,
          RUNNER_ERRORS.invalidModel,
          { allowed_models: Object.keys(VIDEO_MODELS) },
        ],
        [
          { prompt: ok, image_model: "image-z" },
          400,
          RUNNER_ERRORS.invalidImageModel,
          { allowed_image_models: ["image-a-pro", "image-b-2"] },
        ],
        [{ prompt: ok, name: "n".repeat(201), character_image_base64: img }, 400, RUNNER_ERRORS.nameTooLong],
        [
          { prompt: ok, use_as_character_reference: "yes", character_image_base64: img },
          400,
          RUNNER_ERRORS.useAsReference,
        ],
        [{ prompt: ok, character_image_base64: "bm90IGFuIGltYWdl" }, 400, RUNNER_ERRORS.characterBase64],
        [{ prompt: ok, character_image_base64: "A".repeat(28_000_000) }, 413, RUNNER_ERRORS.characterTooLarge],
        [
          { prompt: ok, character_image_url: `${base}/text` },
          400,
          RUNNER_ERRORS.invalidCharacterUrl("not a PNG, JPEG or WEBP image"),
        ],
        [{ prompt: ok, character_image_url: "ftp://example.com/a.png" }, 400, /^Invalid character_image_url: /],
      ];
      for (const [body, status, error, extra] of cases) {
        const r = await tk.request("POST", "/script-runner", { key, body });
        const what = JSON.stringify(body).slice(0, 120);
        assert.is(r.status, status, `${what}: ${JSON.stringify(r.body).slice(0, 200)}`);
        if (typeof error === "string") assert.is(r.body.error, error, what);
        else assert.match(r.body.error, error, what);
        for (const [k, v] of Object.entries(extra ?? {})) assert.equal(r.body[k], v);
      }
      // A URL wins over the upload (ALLOW_PRIVATE_URLS lets the test serve it on loopback).
      const byUrl = await tk.request("POST", "/script-runner", {
        key,
        body: { prompt: ok, character_image_url: `${base}/face.png`, character_image_base64: "not even base64" },
      });
      assert.is(byUrl.status, 202, JSON.stringify(byUrl.body));
      assert.is(await ledgerSum(tk, id), 1000 - byUrl.body.credits_used);
      const other = await partner({ credits: 1000, limits: { ...LIMITS, inflight_jobs: 1 } });
      assert.is((await tk.request("GET", `/script-runner/${byUrl.body.job_id}`, { key: other.key })).status, 404);
      const first = await tk.request("POST", "/script-runner", {
        key: other.key,
        body: { prompt: ok, character_image_base64: img },
      });
      assert.is(first.status, 202);
      assert.is(
        (
          await tk.request("POST", "/script-runner", {
            key: other.key,
            body: { prompt: ok, character_image_base64: img },
          })
        ).status,
        429,
      );
      await done(other.key, first.body.job_id);
      await done(key, byUrl.body.job_id);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  t.run();
}
