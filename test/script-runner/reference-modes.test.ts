// Script Runner's two run modes through the REST API on every database backend (issue 36 items 6 and 10), on
// the pixels as ffmpeg decodes them: in both modes the scene's frame anchors on the character's picture (it is
// composited as the frame's subject); character-locked (the default) hands the picture to the video model too,
// so its clip holds the character's card from the first frame, while scene-driven's clip starts on the frame
// alone. The same script and picture in both runs.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createMediaEngine } from "../../lib/media/index.ts";
import { cardBox } from "../../lib/sandbox.ts";
import { FRAME } from "../../plugins/script-runner/limits.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { suiteKernel } from "../helpers/kernel-suite.ts";
import { character, decode, inset, mad, scaledTo, whole } from "../helpers/pixels.ts";
import { runEnd, runnerOptions } from "./helpers.ts";

const engine = createMediaEngine({ mode: "auto" });
const LIMITS = {
  inflight_jobs: 10,
  rate_limits: { "POST /script-runner": 1000, "GET /script-runner/<job_id>": 100_000 },
};
const SCRIPT = "=== SCENE: Harbour ===\nA harbour at dawn, boats in the mist.\n=== DIALOGUE 1 ===\nWe sail at noon.";
const picture = character();

for (const backend of await databaseBackends()) {
  const t = suite(`script runner reference modes on ${backend.name}`);
  const tk = suiteKernel(t, backend, runnerOptions());
  const blob = async (url: string) => (await tk.kernel.blobs.get(new URL(url).pathname.slice("/media/".length)))!;
  const run = async (key: string, locked: boolean | undefined) => {
    const body = {
      prompt: SCRIPT,
      model: "beta-2-direct",
      character_image_base64: Buffer.from(picture.bytes).toString("base64"),
      ...(locked === undefined ? {} : { use_as_character_reference: locked }),
    };
    const res = await tk.request("POST", "/script-runner", { key, body });
    assert.is(res.status, 202, JSON.stringify(res.body));
    const r = await runEnd(tk, key, res.body.job_id, 120_000);
    assert.is(r.status, "complete", JSON.stringify(r));
    return { frame: await blob(r.scenes[0].start_image_url), clip: await blob(r.scenes[0].video_url) };
  };

  t("both modes anchor the frame on the character; only character-locked carries it into the clip", async () => {
    const { key } = await tk.partner({ credits: 1000, limits: LIMITS });
    const [locked, driven] = await Promise.all([run(key, undefined), run(key, false)]);
    const { width: W, height: H } = FRAME;
    const subject = cardBox(W, H, "subject");
    const wantSubject = await scaledTo(engine, picture.bytes, subject.width, subject.height);
    for (const [name, r] of [
      ["locked", locked],
      ["scene-driven", driven],
    ] as const) {
      const frame = await decode(engine, r.frame, "png");
      const d = mad(frame, inset(subject), wantSubject, inset({ ...subject, x: 0, y: 0 }));
      assert.ok(d < 12, `${name}: the frame's subject is the character's picture (${d.toFixed(1)})`);
    }

    const corner = cardBox(W, H, "corner");
    const wantCorner = await scaledTo(engine, picture.bytes, corner.width, corner.height);
    const lockedFirst = await decode(engine, locked.clip, "mp4", 0);
    const lockedFrame = await scaledTo(engine, locked.frame, W, H);
    const drivenFirst = await decode(engine, driven.clip, "mp4", 0);
    const drivenFrame = await scaledTo(engine, driven.frame, W, H);
    const held = mad(lockedFirst, inset(corner), wantCorner, inset({ ...corner, x: 0, y: 0 }));
    assert.ok(held < 15, `locked: the clip's first frame holds the character's card (${held.toFixed(1)})`);
    assert.ok(
      mad(lockedFirst, inset(corner), lockedFrame, inset(corner)) > 40,
      "locked: the card is not the start frame's own corner",
    );
    const start = mad(drivenFirst, whole(drivenFirst), drivenFrame);
    assert.ok(start < 8, `scene-driven: the clip starts on the start frame alone (${start.toFixed(1)})`);
    assert.ok(
      mad(drivenFirst, inset(corner), wantCorner, inset({ ...corner, x: 0, y: 0 })) > 40,
      "scene-driven: no character card",
    );
  });

  t.run();
}
