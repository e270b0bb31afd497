// The sandbox Omni provider on its own, submitted and polled in place (pollToEnd), on both media engines: real
// H.264/AAC MP4s of the asked size and length; the quoted lines spoken where the record says (the audio is
// loud during the recorded words and quiet between lines), each speaker with its own preset voice; omni-1.1
// frames as the first and last pictures; the reference window composited in; the markers; abort. One short 4k
// render on native ffmpeg. Without an engine: the wait before the render (its share of the progress, the
// markers a quarter of the way through, nothing rendered for a failure).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { type OmniCharacterSnapshot, type OmniGenerationRequest, UnsafeContentError } from "../../contracts/index.ts";
import { createMediaEngine, type MediaEngine } from "../../lib/media/index.ts";
import { type InPlace, pollToEnd } from "../../lib/upstream.ts";
import { encodePng } from "../../plugins/images/png.ts";
import { sandboxOmniProvider } from "../../plugins/omni/sandbox.ts";
import { quotedLines } from "../../plugins/omni/sandbox-speech.ts";
import { frameColour } from "../helpers/frame-colour.ts";
import { decode, meanOf } from "../helpers/pixels.ts";
import { lavfiClipArgs } from "../helpers/test-pattern.ts";
import { ENGINE_MODES } from "../media/util.ts";

const still = (rgb: [number, number, number]) => {
  const px = new Uint8Array(96 * 128 * 3);
  for (let i = 0; i < px.length; i += 3) px.set(rgb, i);
  return { bytes: encodePng(96, 128, px, 3), mimeType: "image/png" };
};
const voice = (base: string) => ({ id: `v-${base}`, name: base, base_voice: base, description: "" });
const person = (id: string, name: string, rgb: [number, number, number], base?: string): OmniCharacterSnapshot => ({
  id,
  name,
  description: name,
  image: still(rgb),
  voice: base ? voice(base) : null,
});

/** A request as `pollToEnd` takes it: submitted, then polled in place until the clip is done. */
function request(over: Partial<InPlace<OmniGenerationRequest>>): InPlace<OmniGenerationRequest> {
  return {
    prompt: "a calm lake",
    model: "omni",
    width: 1080,
    height: 1920,
    seconds: 4,
    seed: null,
    characters: [],
    voices: [],
    referenceImages: [],
    referenceVideo: null,
    ...over,
  };
}

/** Mean RGB of a region of the frame at `t`, the region given as fractions of the frame (x, y, width, height). */
async function regionMean(engine: MediaEngine, mp4: Uint8Array, t: number, [x, y, w, h]: number[]) {
  const f = await decode(engine, mp4, "mp4", t);
  const at = (share: number, of: number) => Math.floor(share * of);
  return meanOf(f, { x: at(x!, f.width), y: at(y!, f.height), width: at(w!, f.width), height: at(h!, f.height) });
}

/** RMS of the mono 16 kHz PCM between two times. */
async function loudness(engine: MediaEngine, mp4: Uint8Array): Promise<(from: number, to: number) => number> {
  const out = await engine.run(["-i", "in.mp4", "-vn", "-ac", "1", "-ar", "16000", "-f", "s16le", "a.pcm"], {
    inputs: { "in.mp4": mp4 },
    outputs: ["a.pcm"],
  });
  const b = out["a.pcm"]!;
  const pcm = new Int16Array(b.buffer, b.byteOffset, Math.floor(b.byteLength / 2));
  return (from, to) => {
    let s = 0;
    let n = 0;
    for (let i = Math.floor(from * 16000); i < Math.min(pcm.length, Math.floor(to * 16000)); i++)
      (s += pcm[i]! ** 2), n++;
    return Math.sqrt(s / Math.max(1, n));
  };
}

const attribution = suite("omni sandbox speech attribution");
attribution("lines go to the speaker named before them, else in turn", () => {
  const mia = person("svc-1", "Mia", [1, 1, 1], "kore");
  const tom = person("svc-2", "Tom", [1, 1, 1], "charon");
  const lines = quotedLines(
    'Mia smiles: "Hi Tom." Tom nods. Tom: "Hello Mia." Then "together now" [sandbox:fail]',
    [mia, tom],
    [],
  );
  assert.equal(
    lines.map((l) => [l.text, l.preset]),
    [
      ["Hi Tom.", "kore"],
      ["Hello Mia.", "charon"],
      ["together now", "kore"],
    ],
  );
  // Request voices take the unnamed lines in turn.
  const turns = quotedLines('"one" "two" "three"', [], [voice("puck"), voice("leda")]);
  assert.equal(
    turns.map((l) => l.preset),
    ["puck", "leda", "puck"],
  );
  assert.equal(quotedLines("nothing quoted here", [], []), []);
});
attribution.run();

const wait = suite("omni sandbox upstream wait");
wait("the wait is the first 15 % (Generating); markers fail a quarter through, before any render", async () => {
  let renders = 0;
  // An engine that only reports halfway and gives up: the wait and the hand-over to the render are what is tested.
  const stub = {
    async run(_args: string[], o: { onProgress?: (f: number) => void }) {
      renders++;
      o.onProgress?.(0.5);
      throw new Error("stub engine: no render");
    },
  } as unknown as MediaEngine;
  const provider = sandboxOmniProvider({ latencyMs: 400, media: () => stub });
  const seen: Array<[number, string | undefined]> = [];
  const started = Date.now();
  const failed = await pollToEnd(
    provider,
    request({ prompt: "x [sandbox:unsafe]", onProgress: (f, m) => void seen.push([f, m]) }),
  ).catch((e) => e);
  assert.instance(failed, UnsafeContentError);
  assert.ok(Date.now() - started < 300, `the marker fails at the quarter mark, not after ${Date.now() - started} ms`);
  assert.is(renders, 0);

  seen.length = 0;
  const stopped = await pollToEnd(
    provider,
    request({ prompt: "a calm lake", onProgress: (f, m) => void seen.push([f, m]) }),
  ).catch((e) => e);
  assert.match(stopped.message, /stub engine/);
  assert.is(renders, 1);
  const waiting = seen.filter(([, m]) => m === "Generating").map(([f]) => f);
  assert.ok(waiting.length > 0 && waiting.every((f) => f <= 0.15), `wait progress ${waiting}`);
  assert.equal(seen.at(-1), [0.15 + 0.5 * 0.85, "Rendering"]);
});
wait.run();

for (const mode of ENGINE_MODES) {
  const t = suite(`omni sandbox on ${mode}`);
  const engine = createMediaEngine({ mode });
  const provider = sandboxOmniProvider({ latencyMs: 0, media: () => engine });
  t.after(async () => {
    await engine.close();
  });

  t("two characters speak their lines in their own voices, at the recorded times", async () => {
    const req = request({
      prompt: 'Mia waves. Mia: "Good morning everyone." Tom replies "Morning, nice to see you."',
      characters: [person("svc-1", "Mia", [220, 40, 40], "kore"), person("svc-2", "Tom", [40, 40, 220], "charon")],
      seconds: 6,
      // Landscape at a quarter of 1080p: the voices, times and stills are the subject, and this clip renders
      // on ffmpeg.wasm too (sizes are proven by the 4k test and the API tests).
      width: 960,
      height: 540,
    });
    const seen: number[] = [];
    const out = await pollToEnd(provider, { ...req, onProgress: (f) => void seen.push(f) });
    const probe = await engine.probe(out.bytes, "o.mp4");
    const v = probe.streams.find((s) => s.type === "video")!;
    assert.equal([v.codec, v.width, v.height], ["h264", 960, 540]);
    assert.is(probe.streams.find((s) => s.type === "audio")?.codec, "aac");
    assert.ok(Math.abs(probe.durationSeconds - 6) < 0.15, String(probe.durationSeconds));
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i]! >= seen[i - 1]!, `progress went back: ${seen}`);

    const words = out.spoken!.words;
    assert.equal(
      words.map((w) => w.text.replace(/[^\w]/g, "").toLowerCase()),
      ["good", "morning", "everyone", "morning", "nice", "to", "see", "you"],
    );
    const level = await loudness(engine, out.bytes);
    const speaking = level(words[0]!.start, words[2]!.end);
    const between = level(words[2]!.end + 0.05, words[3]!.start - 0.05);
    assert.ok(speaking > 3 * between, `speech ${speaking} vs gap ${between}`);
    // The first still is Mia's (red), and the clip moves on to Tom's (blue).
    const { r: r0, b: b0 } = await frameColour(engine, out.bytes, 0.1);
    const { r: r1, b: b1 } = await frameColour(engine, out.bytes, 5.8);
    assert.ok(r0 > 150 && b0 < 100, `start ${r0},${b0}`);
    assert.ok(b1 > 150 && r1 < 100, `end ${r1},${b1}`);
  });

  t("different preset voices sound different", async () => {
    const say = async (base: string) => {
      const out = await pollToEnd(
        provider,
        request({ prompt: '"The quick brown fox jumps."', voices: [voice(base)], width: 540, height: 960 }),
      );
      return out.spoken!.words.at(-1)!.end;
    };
    const [slow, fast] = [await say("gacrux"), await say("fenrir")];
    assert.ok(Math.abs(slow - fast) > 0.1, `${slow} vs ${fast}`);
  });

  t("omni-1.1 starts on the first frame and ends on the last; a reference window is composited", async () => {
    const out = await pollToEnd(
      provider,
      request({
        model: "omni-1.1",
        firstFrame: still([230, 20, 20]),
        lastFrame: still([20, 20, 230]),
        width: 540,
        height: 960,
      }),
    );
    const { r: r0, b: b0 } = await frameColour(engine, out.bytes, 0);
    const { r: r1, b: b1 } = await frameColour(engine, out.bytes, 3.95);
    assert.ok(r0 > 180 && b0 < 60, `first ${r0},${b0}`);
    assert.ok(b1 > 180 && r1 < 60, `last ${r1},${b1}`);
    assert.equal(out.spoken, { language: "en", words: [] });

    const ref = await engine.run([...lavfiClipArgs("color=c=0x00ff00:size=320x240:rate=25:duration=3"), "r.mp4"], {
      outputs: ["r.mp4"],
    });
    const withRef = await pollToEnd(
      provider,
      request({
        characters: [person("svc-1", "Mia", [230, 20, 20])],
        referenceVideo: { bytes: ref["r.mp4"]!, seconds: 3, url: "https://example.com/r.mp4" },
        width: 540,
        height: 960,
      }),
    );
    // The lower-right third shows the green reference while it lasts, the red still elsewhere.
    const [, g] = await regionMean(engine, withRef.bytes, 1, [0.7, 0.85, 1 / 4, 1 / 8]);
    const [r] = await regionMean(engine, withRef.bytes, 1, [0, 0, 1 / 4, 1 / 8]);
    assert.ok(g! > 150, `reference corner green ${g}`);
    assert.ok(r! > 150, `still red ${r}`);
  });

  t("markers: unsafe is a safety block (before fail), fail a plain failure; abort stops", async () => {
    const unsafe = await pollToEnd(provider, request({ prompt: "x [sandbox:fail] [sandbox:unsafe]" })).catch((e) => e);
    assert.instance(unsafe, UnsafeContentError);
    const failed = await pollToEnd(provider, request({ prompt: "x [sandbox:fail]" })).catch((e) => e);
    assert.instance(failed, Error);
    assert.not.instance(failed, UnsafeContentError);
    const ctl = new AbortController();
    const run = pollToEnd(provider, request({ seconds: 10, signal: ctl.signal }));
    setTimeout(() => ctl.abort(), 200);
    assert.ok(
      await run.then(
        () => false,
        () => true,
      ),
      "an aborted render rejects",
    );
  });

  if (mode === "native") {
    t("4k: 2160x3840, the length asked", async () => {
      const out = await pollToEnd(
        provider,
        request({ width: 2160, height: 3840, seconds: 4, characters: [person("svc-1", "Mia", [120, 120, 20])] }),
      );
      const probe = await engine.probe(out.bytes, "o.mp4");
      const v = probe.streams.find((s) => s.type === "video")!;
      assert.equal([v.width, v.height], [2160, 3840]);
      assert.ok(Math.abs(probe.durationSeconds - 4) < 0.15);
    });
  }

  t.run();
}
