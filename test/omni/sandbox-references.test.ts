// Sandboxes use the references they are given (issue 36 item 6), checked on the pixels as ffmpeg decodes them:
// the image sandbox paints an uploaded reference (read at submit, as an upstream receives it) into the frame as
// its subject and takes its colours, where a reference by URL only seeds it; the video sandbox starts on the
// start frame and, given a character reference too (Script Runner's character-locked mode), holds the
// character's card on it from the first frame, so locked and scene-driven first frames differ there and only
// there; reference images without a frame make the subject and the palette of the scene; Omni characters stand
// in a scene made of reference images. Small sizes, on every media engine present.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { ImageGenerationRequest, OmniGenerationRequest, VideoGenerationRequest } from "../../contracts/index.ts";
import { createMediaEngine } from "../../lib/media/index.ts";
import { cardBox, cardRow } from "../../lib/sandbox.ts";
import { type InPlace, pollToEnd } from "../../lib/upstream.ts";
import { sandboxImageProvider } from "../../plugins/images/sandbox.ts";
import { sandboxOmniProvider } from "../../plugins/omni/sandbox.ts";
import { sandboxVideoProvider } from "../../plugins/video/sandbox.ts";
import { character, decode, flat, inset, mad, meanOf, scaledTo, whole } from "../helpers/pixels.ts";
import { ENGINE_MODES } from "../media/util.ts";

for (const mode of ENGINE_MODES) {
  const t = suite(`sandbox references on ${mode}`);
  const engine = createMediaEngine({ mode });
  t.after(async () => {
    await engine.close();
  });

  t(
    "image sandbox: an uploaded reference is the frame's subject and gives it its colours; one by URL does not",
    async () => {
      const provider = sandboxImageProvider({ latencyMs: 0 }).route("primary")!;
      const [W, H] = [360, 640];
      const pic = character();
      const green = flat([20, 190, 70]);
      const base: Omit<ImageGenerationRequest, "references"> = {
        prompt: "A harbour at dawn. Featuring the character.",
        model: "image-a-pro",
        width: W,
        height: H,
        background: "auto",
        index: 0,
      };
      // Read at submit: the reader is a function, which no recorded request can carry.
      const uploaded = await pollToEnd(provider, {
        ...base,
        references: [{ id: "sha-1", mimeType: "image/png", read: async () => pic.bytes }],
      });
      const byUrl = await pollToEnd(provider, {
        ...base,
        references: [{ id: "https://example.com/c.png", url: "https://example.com/c.png" }],
      });
      const box = cardBox(W, H, "subject");
      const want = await scaledTo(engine, pic.bytes, box.width, box.height);
      const got = await decode(engine, uploaded.bytes, "png");
      assert.equal([got.width, got.height], [W, H]);
      const near = mad(got, inset(box), want, inset({ ...box, x: 0, y: 0 }));
      const far = mad(await decode(engine, byUrl.bytes, "png"), inset(box), want, inset({ ...box, x: 0, y: 0 }));
      assert.ok(near < 12, `the card region is the character's picture: mean difference ${near.toFixed(1)}`);
      assert.ok(far > 50, `a reference the sandbox cannot read leaves the character out: ${far.toFixed(1)}`);

      // A strong green reference: the background below the card is green.
      const greenFrame = await decode(
        engine,
        (
          await pollToEnd(provider, {
            ...base,
            references: [{ id: "sha-2", mimeType: "image/png", read: async () => green.bytes }],
          })
        ).bytes,
        "png",
      );
      const below = { x: 0, y: box.y + box.height + 2, width: W, height: H - box.y - box.height - 2 };
      const [r, g, b] = meanOf(greenFrame, below);
      assert.ok(g > r + 60 && g > b + 60, `green carried: ${[r, g, b].map(Math.round)}`);
    },
  );

  t(
    "video sandbox: character-locked holds the character's card from the first frame; scene-driven starts on the frame alone",
    async () => {
      const provider = sandboxVideoProvider({ latencyMs: 0, media: () => engine }).route("gamma-3.1-fast")!;
      const [W, H] = [360, 640];
      const start = flat([40, 110, 170], 180, 320);
      const pic = character();
      const base: InPlace<VideoGenerationRequest> = {
        prompt: "A harbour at dawn.\nLine 1.",
        negativePrompt: null,
        model: "gamma-3.1-fast",
        width: W,
        height: H,
        seconds: 2,
        sound: false,
        startFrame: start,
        referenceImages: [],
        referenceVideos: [],
        referenceAudio: [],
      };
      const locked = await pollToEnd(provider, { ...base, referenceImages: [pic] });
      const driven = await pollToEnd(provider, base);
      const [l0, d0] = [await decode(engine, locked.bytes, "mp4", 0), await decode(engine, driven.bytes, "mp4", 0)];
      const startPx = await scaledTo(engine, start.bytes, W, H);
      const box = cardBox(W, H, "corner");
      const want = await scaledTo(engine, pic.bytes, box.width, box.height);
      const local = inset({ ...box, x: 0, y: 0 });
      assert.ok(
        mad(d0, whole(d0), startPx) < 8,
        `scene-driven starts on the start frame: ${mad(d0, whole(d0), startPx).toFixed(1)}`,
      );
      assert.ok(
        mad(l0, inset(box), want, local) < 15,
        `locked: the corner is the character: ${mad(l0, inset(box), want, local).toFixed(1)}`,
      );
      assert.ok(mad(l0, inset(box), d0, inset(box)) > 50, "the first frames differ where the character is");
      const top = { x: 0, y: 0, width: W, height: box.y - 4 };
      assert.ok(mad(l0, top, d0, top) < 6, `and are the same scene elsewhere: ${mad(l0, top, d0, top).toFixed(1)}`);
      // Held to the end, not only shown at the start.
      const l1 = await decode(engine, locked.bytes, "mp4", 1.9);
      assert.ok(
        mad(l1, inset(box), want, local) < 15,
        `still the character at the end: ${mad(l1, inset(box), want, local).toFixed(1)}`,
      );
    },
  );

  t("video sandbox: reference images without a frame are the subject and the palette", async () => {
    const provider = sandboxVideoProvider({ latencyMs: 0, media: () => engine }).route("beta-2-direct")!;
    const [W, H] = [360, 640];
    const magenta = flat([200, 30, 170]);
    const base: InPlace<VideoGenerationRequest> = {
      prompt: "A dancer",
      negativePrompt: null,
      model: "beta-2-direct",
      width: W,
      height: H,
      seconds: 2,
      sound: false,
      referenceImages: [],
      referenceVideos: [],
      referenceAudio: [],
    };
    const withRef = await decode(
      engine,
      (await pollToEnd(provider, { ...base, referenceImages: [magenta] })).bytes,
      "mp4",
      1,
    );
    const without = await decode(engine, (await pollToEnd(provider, base)).bytes, "mp4", 1);
    const box = cardBox(W, H, "subject");
    const want = await scaledTo(engine, magenta.bytes, box.width, box.height);
    assert.ok(
      mad(withRef, inset(box, 8), want, inset({ ...box, x: 0, y: 0 }, 8)) < 15,
      "the subject is the reference's picture",
    );
    // Above the card: the scene's own colours (the prompt's words scroll through it, dark boxes included).
    const above = { x: 0, y: 0, width: W, height: box.y };
    const [r, g, b] = meanOf(withRef, above);
    assert.ok(r > g + 50 && b > g + 50, `magenta carried: ${[r, g, b].map(Math.round)}`);
    const [r0, g0, b0] = meanOf(without, above);
    assert.not.ok(r0 > g0 + 50 && b0 > g0 + 50, `the test scene is not magenta: ${[r0, g0, b0].map(Math.round)}`);
  });

  t("omni sandbox: characters stand in a scene made of the reference images", async () => {
    const provider = sandboxOmniProvider({ latencyMs: 0, media: () => engine });
    const [W, H] = [540, 960];
    const pic = character();
    const req: InPlace<OmniGenerationRequest> = {
      prompt: "Mia on a green hill",
      model: "omni",
      width: W,
      height: H,
      seconds: 4,
      seed: null,
      characters: [{ id: "svc-00000001", name: "Mia", description: "Mia", image: pic, voice: null }],
      voices: [],
      referenceImages: [flat([20, 190, 70], 270, 480)],
      referenceVideo: null,
    };
    const frame = await decode(engine, (await pollToEnd(provider, req)).bytes, "mp4", 0.2);
    const [box] = cardRow(W, H, 1);
    const want = await scaledTo(engine, pic.bytes, box!.width, box!.height);
    const d = mad(frame, inset(box!), want, inset({ ...box!, x: 0, y: 0 }));
    assert.ok(d < 15, `the character's picture in the middle: ${d.toFixed(1)}`);
    const [r, g, b] = meanOf(frame, { x: 0, y: H - 80, width: W, height: 60 });
    assert.ok(g > r + 60 && g > b + 60, `the green reference is the scene: ${[r, g, b].map(Math.round)}`);
  });

  t.run();
}
