// The Omni library through the REST API on every database backend: the 30 presets with real, distinct
// spoken samples made once; partner voices (free) with their own sample; characters (30 standard, 33
// api_plus10, a custom rate) from base64 and from a URL fetched before the charge; a character keeps its
// voice after the voice is deleted; every refusal leaves no row, no file and no ledger line; another
// account's ids are 404; the pause and the feature switch.

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createMediaEngine } from "../../lib/media/index.ts";
import { wavSamples } from "../../lib/speech/index.ts";
import { OMNI_ERRORS } from "../../plugins/omni/errors.ts";
import { VOICE_PRESETS } from "../../plugins/omni/voices/presets.ts";
import type { TestKernel } from "../../testkit/index.ts";
import { assertAnswer, assertFields } from "../helpers/assert.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { testKernel } from "../helpers/kernel-suite.ts";
import { balance, ledgerSum, mediaBytes } from "../helpers/partner-reads.ts";
import { OMNI_LIMITS, omniOptions, png } from "./helpers.ts";

const engine = createMediaEngine({ mode: "native" });

/** RMS of 16-bit samples. */
function rms(samples: Int16Array): number {
  let s = 0;
  for (const x of samples) s += x * x;
  return Math.sqrt(s / Math.max(1, samples.length));
}

for (const backend of await databaseBackends()) {
  const t = suite(`omni library on ${backend.name}`);
  const tk = testKernel(t, backend, omniOptions());
  const partner = (opts: Parameters<TestKernel["partner"]>[0] = {}) => tk.partner({ limits: OMNI_LIMITS, ...opts });
  const admin = (method: string, path: string, body: unknown) =>
    tk.request(method, `/api/v1/admin${path}`, { headers: { authorization: `Bearer ${tk.adminToken}` }, body });
  const blobCount = async () => (await tk.kernel.blobs.keys()).length;
  const rows = async (table: string, partnerId: string) =>
    (
      await tk.kernel.database.kysely
        .selectFrom(table as any)
        .select("partner_id" as any)
        .where("partner_id" as any, "=", partnerId)
        .execute()
    ).length;

  t("30 presets, each with a real spoken sample, all different, synthesized once", async () => {
    const { key } = await partner();
    const res = await tk.request("GET", "/omni/voice-presets", { key });
    assert.is(res.status, 200, JSON.stringify(res.body));
    assert.is(res.body.presets.length, 30);
    assert.equal(
      res.body.presets.map((p: any) => p.id),
      VOICE_PRESETS.map((p) => p.id),
    );
    assertFields(res.body.presets[0], "gender id name sample_url traits");
    assert.equal(
      [res.body.presets[7].id, res.body.presets[7].name, res.body.presets[7].gender, res.body.presets[7].traits],
      ["kore", "Kore", "female", "Firm, mid pitch"],
    );
    const prints = new Set<string>();
    for (const p of res.body.presets) {
      const wav = await mediaBytes(tk, p.sample_url);
      const { samples, sampleRate } = wavSamples(wav);
      assert.ok(samples.length / sampleRate > 1, `${p.id}: ${samples.length / sampleRate} s`);
      assert.ok(rms(samples) > 500, `${p.id} is silent`);
      // The engine decodes it as audio too.
      const probe = await engine.probe(wav, "s.wav");
      assert.is(probe.streams[0]?.type, "audio");
      prints.add(`${samples.length}:${Math.round(rms(samples))}`);
    }
    assert.is(prints.size, 30, "every preset sounds different");
    const again = await tk.request("GET", "/omni/voice-presets", { key });
    assert.equal(
      again.body.presets.map((p: any) => p.sample_url),
      res.body.presets.map((p: any) => p.sample_url),
    );
    assert.is((await tk.kernel.blobs.keys()).filter((k) => k.includes("/presets/")).length, 30, "made once");
  });

  t("voices: free, with their own sample; listed newest first; deleted; every refusal changes nothing", async () => {
    const { key, id } = await partner({ credits: 100 });
    const res = await tk.request("POST", "/omni/voices", {
      key,
      body: {
        base_voice: "puck",
        name: "  Host  ",
        description: "upbeat",
        example_dialogue: "Welcome back to the show!",
        partner_job_id: "v-1",
      },
    });
    assertAnswer(
      res,
      201,
      "base_voice base_voice_name created_at description example_dialogue gender name partner_job_id request_id sample_url traits voice_id",
    );
    assert.match(res.body.voice_id, /^svc-[0-9a-f]{8}$/);
    assert.equal(
      [res.body.name, res.body.base_voice_name, res.body.gender, res.body.traits, res.body.partner_job_id],
      ["Host", "Puck", "male", "Upbeat, mid pitch", "v-1"],
    );
    const sample = wavSamples(await mediaBytes(tk, res.body.sample_url));
    assert.ok(sample.samples.length / sample.sampleRate > 1 && rms(sample.samples) > 500);
    const second = await tk.request("POST", "/omni/voices", { key, body: { base_voice: "kore", name: "Second" } });
    assert.is(second.status, 201);
    const list = await tk.request("GET", "/omni/voices", { key });
    assert.equal(
      list.body.voices.map((v: any) => v.voice_id),
      [second.body.voice_id, res.body.voice_id],
    );
    assert.is(await balance(tk, key), 100);
    assert.is(await ledgerSum(tk, id), 100);

    const blobs = await blobCount();
    const cases: Array<[unknown, string]> = [
      [{ name: "x" }, OMNI_ERRORS.unknownBaseVoice],
      [{ base_voice: "nova", name: "x" }, OMNI_ERRORS.unknownBaseVoice],
      [{ base_voice: "toString", name: "x" }, OMNI_ERRORS.unknownBaseVoice],
      [{ base_voice: 7, name: "x" }, OMNI_ERRORS.unknownBaseVoice],
      [{ base_voice: "kore" }, OMNI_ERRORS.voiceNameRequired],
      [{ base_voice: "kore", name: "   " }, OMNI_ERRORS.voiceNameRequired],
      [{ base_voice: "kore", name: "n".repeat(121) }, OMNI_ERRORS.voiceNameTooLong],
      [{ base_voice: "kore", name: "x", description: "d".repeat(2001) }, OMNI_ERRORS.voiceDescriptionTooLong],
      [{ base_voice: "kore", name: "x", example_dialogue: "e".repeat(121) }, OMNI_ERRORS.exampleDialogueTooLong],
    ];
    for (const [body, error] of cases) {
      const r = await tk.request("POST", "/omni/voices", { key, body });
      assert.equal([r.status, r.body.error], [400, error], JSON.stringify(body));
    }
    assert.is(await blobCount(), blobs);
    assert.is(await rows("omni_voices", id), 2);

    const other = await partner();
    assert.equal([(await tk.request("DELETE", `/omni/voices/${res.body.voice_id}`, { key: other.key })).status], [404]);
    assert.is((await tk.request("DELETE", "/omni/voices/svc-00000000", { key })).body.error, OMNI_ERRORS.notFound);
    const del = await tk.request("DELETE", `/omni/voices/${res.body.voice_id}`, { key });
    assert.equal([del.status, del.body.ok, del.body.deleted_id], [200, true, res.body.voice_id]);
    assert.is((await tk.request("GET", "/omni/voices", { key })).body.voices.length, 1);
    assert.is(await blobCount(), blobs - 1, "its sample went with it");
  });

  t(
    "characters: prices on every tier, both image sources, the image served back, the voice kept after its deletion",
    async () => {
      const picture = Buffer.from(png([20, 160, 90]), "base64");
      const server = createServer((req, res) => {
        if (req.url === "/face.png") return res.writeHead(200, { "content-type": "image/png" }).end(picture);
        if (req.url === "/text") return res.writeHead(200, { "content-type": "image/png" }).end("not an image");
        res.writeHead(404).end();
      });
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      try {
        const plus = await partner({ credits: 1000 });
        const std = await partner({ credits: 1000, tier: "standard" });
        const v = await tk.request("POST", "/omni/voices", {
          key: plus.key,
          body: { base_voice: "charon", name: "Deep" },
        });
        const a = await tk.request("POST", "/omni/characters", {
          key: plus.key,
          body: {
            name: "Ada",
            description: "a calm engineer",
            image_base64: `data:image/png;base64,${png([200, 10, 10])}`,
            voice_id: v.body.voice_id,
            partner_job_id: "c-1",
          },
        });
        assertAnswer(
          a,
          201,
          "character_id credits_remaining credits_used description image_url name partner_job_id request_id voice_id",
        );
        assert.equal([a.body.credits_used, a.body.credits_remaining, a.body.voice_id], [33, 967, v.body.voice_id]);
        const b = await tk.request("POST", "/omni/characters", {
          key: std.key,
          body: { name: "Ben", image_url: `${base}/face.png` },
        });
        assert.is(b.status, 201, JSON.stringify(b.body));
        assert.is(b.body.credits_used, 30);
        assert.equal(Buffer.from(await mediaBytes(tk, b.body.image_url)), picture, "the hosted image is the one sent");

        const custom = await partner({ credits: 1000, tier: "custom" });
        const noRate = await tk.request("POST", "/omni/characters", {
          key: custom.key,
          body: { name: "C", image_base64: png([1, 1, 1]) },
        });
        assert.equal([noRate.status, noRate.body.error], [400, OMNI_ERRORS.customNoRate]);
        await admin("PATCH", `/partners/${custom.id}`, { custom_rates: { omni: { character_creation: 12.5 } } });
        assert.is(
          (
            await tk.request("POST", "/omni/characters", {
              key: custom.key,
              body: { name: "C", image_base64: png([1, 1, 1]) },
            })
          ).body.credits_used,
          13,
        );

        // The voice is deleted; the character keeps it.
        await tk.request("DELETE", `/omni/voices/${v.body.voice_id}`, { key: plus.key });
        const list = await tk.request("GET", "/omni/characters", { key: plus.key });
        assert.is(list.body.characters.length, 1);
        assert.equal(list.body.characters[0].voice, {
          id: v.body.voice_id,
          name: "Deep",
          base_voice: "charon",
          base_voice_name: "Charon",
        });
        assert.is(list.body.characters[0].voice_id, v.body.voice_id);
        assert.ok(list.body.characters[0].created_at);

        // Refusals: nothing charged, nothing stored.
        const { key, id } = await partner({ credits: 40 });
        const theirVoice = v.body.voice_id;
        const blobs = await blobCount();
        const cases: Array<[unknown, number, string]> = [
          [{ image_base64: png([1, 2, 3]) }, 400, OMNI_ERRORS.characterNameRequired],
          [{ name: "", image_base64: png([1, 2, 3]) }, 400, OMNI_ERRORS.characterNameRequired],
          [{ name: "n".repeat(121), image_base64: png([1, 2, 3]) }, 400, OMNI_ERRORS.characterNameTooLong],
          [{ name: "x" }, 400, OMNI_ERRORS.provideImage],
          [{ name: "x", image_base64: png([1, 2, 3]), image_url: `${base}/face.png` }, 400, OMNI_ERRORS.bothImages],
          [{ name: "x", image_base64: "bm90IGFuIGltYWdl" }, 400, OMNI_ERRORS.invalidImageBase64],
          [{ name: "x", image_base64: "%%%" }, 400, OMNI_ERRORS.invalidImageBase64],
          [{ name: "x", image_base64: "A".repeat(28_000_000) }, 413, OMNI_ERRORS.imageTooLarge],
          [{ name: "x", image_url: `${base}/text` }, 400, OMNI_ERRORS.invalidImageUrl("not a PNG, JPEG or WebP image")],
          [
            { name: "x", image_url: `${base}/missing.png` },
            400,
            OMNI_ERRORS.invalidImageUrl("the server answered 404"),
          ],
          [{ name: "x", image_url: "ftp://example.com/a.png" }, 400, ""],
          [{ name: "x", image_base64: png([1, 2, 3]), voice_id: theirVoice }, 400, OMNI_ERRORS.voicesNotFound],
          [{ name: "x", image_base64: png([1, 2, 3]), voice_id: "svc-00000000" }, 400, OMNI_ERRORS.voicesNotFound],
        ];
        for (const [body, status, error] of cases) {
          const r = await tk.request("POST", "/omni/characters", { key, body });
          assert.is(r.status, status, JSON.stringify([String(JSON.stringify(body)).slice(0, 100), r.body]));
          if (error) assert.is(r.body.error, error);
          else assert.match(r.body.error, /^Invalid image_url: /);
        }
        // 33 > 40? No: one fits, the second is a 402 with the spec's text, and removes its stored image.
        assert.is(
          (await tk.request("POST", "/omni/characters", { key, body: { name: "ok", image_base64: png([9, 9, 9]) } }))
            .status,
          201,
        );
        const poor = await tk.request("POST", "/omni/characters", {
          key,
          body: { name: "poor", image_base64: png([9, 9, 9]) },
        });
        assert.equal(
          [poor.status, poor.body.error, poor.body.credits_remaining],
          [402, OMNI_ERRORS.characterInsufficient(33), 7],
        );
        assert.is(await blobCount(), blobs + 1);
        assert.is(await rows("omni_characters", id), 1);
        assert.is(await ledgerSum(tk, id), 7);

        // Delete: another account's is 404; the owner's goes with its image.
        assert.is((await tk.request("DELETE", `/omni/characters/${a.body.character_id}`, { key })).status, 404);
        const del = await tk.request("DELETE", `/omni/characters/${a.body.character_id}`, { key: plus.key });
        assert.equal([del.status, del.body.ok, del.body.deleted_id], [200, true, a.body.character_id]);
        assert.is((await tk.request("GET", "/omni/characters", { key: plus.key })).body.characters.length, 0);
        assert.is(await tk.kernel.blobs.get(new URL(a.body.image_url).pathname.slice("/media/".length)), null);
      } finally {
        server.closeAllConnections();
        server.close();
      }
    },
  );

  t("character creation is not counted in the in-flight cap", async () => {
    const { key } = await partner({ credits: 1000, limits: { ...OMNI_LIMITS, inflight_jobs: 1 } });
    const busy = await tk.request("POST", "/omni/video", { key, body: { prompt: "busy", duration: 4 } });
    assert.is(busy.status, 202);
    assert.is((await tk.request("POST", "/omni/video", { key, body: { prompt: "over", duration: 4 } })).status, 429);
    assert.is(
      (
        await tk.request("POST", "/omni/characters", {
          key,
          body: { name: "still fine", image_base64: png([5, 5, 5]) },
        })
      ).status,
      201,
    );
  });

  t("pause and feature switch", async () => {
    const { key } = await partner();
    const off = await partner({ features: { omni: false } });
    const r = await tk.request("GET", "/omni/voice-presets", { key: off.key });
    assert.equal([r.status, r.body.error], [403, "Feature 'omni' is not enabled for this partner."]);
    const paused = await admin("PUT", "/pauses/omni", { paused: true });
    assert.is(paused.status, 200, JSON.stringify(paused.body));
    assert.equal(
      (await tk.request("POST", "/omni/voices", { key, body: { base_voice: "kore", name: "x" } })).body.error,
      OMNI_ERRORS.voicesUnavailable,
    );
    const c = await tk.request("POST", "/omni/characters", { key, body: { name: "x", image_base64: png([1, 1, 1]) } });
    assert.equal([c.status, c.body.error], [503, OMNI_ERRORS.unavailable]);
    assert.equal((await tk.request("POST", "/omni/video", { key, body: { prompt: "x" } })).status, 503);
    await admin("PUT", "/pauses/omni", { paused: false });
    assert.is((await tk.request("POST", "/omni/voices", { key, body: { base_voice: "kore", name: "x" } })).status, 201);
  });

  t.run();
}
