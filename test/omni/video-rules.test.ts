// Every field rule of POST /omni/video, each refused before any charge with its text, and hostile values
// (wrong types, huge numbers, nesting) refused as 400s, never 5xx; on PGlite (the rules do not touch the
// backend beyond ownership, which video-api.test.ts covers on both).

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createMediaEngine } from "../../lib/media/index.ts";
import { OMNI_ERRORS } from "../../plugins/omni/errors.ts";
import { balance } from "../helpers/partner-reads.ts";
import { testPatternArgs } from "../helpers/test-pattern.ts";
import { character, OMNI_LIMITS, omniKernel, png, voice } from "./helpers.ts";

const t = suite("POST /omni/video rules");
const engine = createMediaEngine({ mode: "native" });

t("every rule, its text, nothing charged", async () => {
  const tk = await omniKernel({ name: "pglite" });
  const made = await engine.run([...testPatternArgs("160x120", 25, 35), "long.mp4"], { outputs: ["long.mp4"] });
  const server = createServer((req, res) => {
    if (req.url === "/long.mp4") return res.writeHead(200, { "content-type": "video/mp4" }).end(made["long.mp4"]);
    if (req.url === "/playlist.m3u8")
      return res
        .writeHead(200, { "content-type": "application/vnd.apple.mpegurl" })
        .end("#EXTM3U\n#EXTINF:1,\nfile:///etc/passwd\n");
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const { key } = await tk.partner({ credits: 1000, limits: OMNI_LIMITS });
    const c = await character(tk, key, "C", [1, 2, 3]);
    const v = await voice(tk, key, "V", "kore");
    const img = png([1, 2, 3]);
    const before = await balance(tk, key);
    const cases: Array<[unknown, number, string | RegExp]> = [
      [{}, 400, OMNI_ERRORS.promptRequired],
      [{ prompt: "   " }, 400, OMNI_ERRORS.promptRequired],
      [{ prompt: 7 }, 400, OMNI_ERRORS.promptRequired],
      [{ prompt: "x".repeat(10_001) }, 400, OMNI_ERRORS.promptTooLong],
      [{ prompt: "x", model: "omni-2" }, 400, OMNI_ERRORS.invalidModel],
      [{ prompt: "x", model: ["omni"] }, 400, OMNI_ERRORS.invalidModel],
      [{ prompt: "x", duration: 5 }, 400, OMNI_ERRORS.invalidDuration],
      [{ prompt: "x", duration: "8" }, 400, OMNI_ERRORS.invalidDuration],
      [{ prompt: "x", duration: 1e308 }, 400, OMNI_ERRORS.invalidDuration],
      [{ prompt: "x", aspect_ratio: "1:1" }, 400, OMNI_ERRORS.invalidAspectRatio],
      [{ prompt: "x", resolution: "8k" }, 400, OMNI_ERRORS.invalidResolution],
      [{ prompt: "x", seed: 1.5 }, 400, OMNI_ERRORS.invalidSeed],
      [{ prompt: "x", seed: 2 ** 60 }, 400, OMNI_ERRORS.invalidSeed],
      [{ prompt: "x", strip_metadata: "true" }, 400, OMNI_ERRORS.stripMetadata],
      [{ prompt: "x", first_frame_url: "https://example.com/a.png" }, 400, OMNI_ERRORS.framesNeedOmni11],
      [
        { prompt: "x", model: "omni-1.1", last_frame_url: "https://example.com/a.png" },
        400,
        OMNI_ERRORS.lastFrameNeedsFirst,
      ],
      [
        { prompt: "x", model: "omni-1.1", first_frame_url: "https://example.com/a.png", character_ids: [c] },
        400,
        OMNI_ERRORS.framesExclusive,
      ],
      [
        { prompt: "x", model: "omni-1.1", first_frame_url: "https://example.com/a.png", voice_ids: [v] },
        400,
        OMNI_ERRORS.framesExclusive,
      ],
      [
        { prompt: "x", model: "omni-1.1", first_frame_url: "https://example.com/a.png", image_base64: [img] },
        400,
        OMNI_ERRORS.framesExclusive,
      ],
      [
        {
          prompt: "x",
          model: "omni-1.1",
          first_frame_url: "https://example.com/a.png",
          video_url: "https://example.com/v.mp4",
          video_start: 0,
          video_end: 1,
        },
        400,
        OMNI_ERRORS.framesExclusive,
      ],
      [{ prompt: "x", character_ids: "svc-00000000" }, 400, OMNI_ERRORS.arrayOfStrings("character_ids")],
      [{ prompt: "x", character_ids: [[c]] }, 400, OMNI_ERRORS.arrayOfStrings("character_ids")],
      [{ prompt: "x", voice_ids: [1] }, 400, OMNI_ERRORS.arrayOfStrings("voice_ids")],
      [{ prompt: "x", character_ids: [c, c, c, c] }, 400, OMNI_ERRORS.tooManyCharacters],
      [{ prompt: "x", voice_ids: [v, v, v, v] }, 400, OMNI_ERRORS.tooManyVoices],
      [{ prompt: "x", image_urls: {} }, 400, OMNI_ERRORS.arrayOfStrings("image_urls")],
      [
        {
          prompt: "x",
          image_base64: [img, img, img, img, img, img],
          video_url: `${base}/long.mp4`,
          video_start: 0,
          video_end: 1,
        },
        400,
        OMNI_ERRORS.referenceBudget,
      ],
      [
        { prompt: "x", image_base64: [img, img, img, img, img], character_ids: [c, c, c] },
        400,
        OMNI_ERRORS.referenceBudget,
      ],
      [{ prompt: "x", video_url: `${base}/long.mp4` }, 400, OMNI_ERRORS.trimRequired],
      [{ prompt: "x", video_start: 1, video_end: 2 }, 400, OMNI_ERRORS.trimWithoutVideo],
      [{ prompt: "x", video_url: `${base}/long.mp4`, video_start: 3, video_end: 2 }, 400, OMNI_ERRORS.invalidTrim],
      [{ prompt: "x", video_url: `${base}/long.mp4`, video_start: "0", video_end: 2 }, 400, OMNI_ERRORS.invalidTrim],
      [{ prompt: "x", video_url: `${base}/long.mp4`, video_start: 0, video_end: 10.5 }, 400, OMNI_ERRORS.trimTooLong],
      [
        { prompt: "x", video_url: `${base}/long.mp4`, video_start: 0, video_end: 5 },
        400,
        OMNI_ERRORS.referenceVideoTooLong,
      ],
      [
        { prompt: "x", video_url: `${base}/playlist.m3u8`, video_start: 0, video_end: 5 },
        400,
        OMNI_ERRORS.referenceVideoUnreadable,
      ],
      [
        { prompt: "x", video_url: `${base}/missing.mp4`, video_start: 0, video_end: 5 },
        400,
        OMNI_ERRORS.referenceUnavailable(404),
      ],
      [
        { prompt: "x", video_url: "ftp://example.com/v.mp4", video_start: 0, video_end: 5 },
        400,
        /^Invalid video_url: /,
      ],
      [{ prompt: "x", image_urls: ["javascript:alert(1)"] }, 400, /^Invalid image_urls entry: /],
      [{ prompt: "x", image_base64: ["bm90IGFuIGltYWdl"] }, 400, OMNI_ERRORS.invalidReferenceImageBase64],
      [{ prompt: "x", image_base64: ["A".repeat(28_000_000)] }, 413, OMNI_ERRORS.referenceImageTooLarge],
      [
        { prompt: "x", image_base64: Array.from({ length: 4 }, () => "A".repeat(26_000_000)) },
        413,
        OMNI_ERRORS.referenceImagesTooLarge,
      ],
      [{ prompt: "x", character_ids: ["svc-00000000"] }, 400, OMNI_ERRORS.charactersNotFound],
      [{ prompt: "x", voice_ids: ["not-an-id"] }, 400, OMNI_ERRORS.voicesNotFound],
      [{ prompt: "x", callback_url: 12 }, 400, OMNI_ERRORS.callbackUrl],
      [{ prompt: "x", partner_job_id: { a: 1 } }, 400, /partner_job_id/],
    ];
    for (const [body, status, error] of cases) {
      const res = await tk.request("POST", "/omni/video", { key, body });
      const what = JSON.stringify(body).slice(0, 160);
      assert.is(res.status, status, `${what}: ${JSON.stringify(res.body).slice(0, 200)}`);
      if (typeof error === "string") assert.is(res.body.error, error, what);
      else assert.match(res.body.error, error, what);
    }
    // Deep nesting and a body that is not an object are the kernel's 400s, never a 5xx.
    const deep = `{"prompt":"x","character_ids":${"[".repeat(5000)}"x"${"]".repeat(5000)}}`;
    assert.is((await tk.request("POST", "/omni/video", { key, body: deep })).status, 400);
    assert.is((await tk.request("POST", "/omni/video", { key, body: [1, 2] })).status, 400);
    assert.is(await balance(tk, key), before);
    assert.is(
      (
        await tk.kernel.database.kysely
          .selectFrom("omni_videos" as any)
          .select("job_id")
          .execute()
      ).length,
      0,
    );
  } finally {
    server.closeAllConnections();
    server.close();
    await tk.close();
    await engine.close();
  }
});

t.run();
