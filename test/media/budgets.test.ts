// The pixel and probe budgets (lib/media/budgets.ts) and the child limits' command line (lib/media/native.ts):
// pure functions, no tool started.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { writePng } from "../../lib/formats/index.ts";
import {
  checkPicture,
  createNativeEngine,
  createWasmEngine,
  detectNativeFfmpeg,
  findOnPath,
  isMediaError,
  limitedCommand,
  MEDIA_BUDGETS,
  type Probe,
  probeOverBudget,
} from "../../lib/media/index.ts";
import { fixture } from "./util.ts";

const t = suite("media: budgets and child limits");

const be32 = (n: number) => [(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];
const png = (w: number, h: number, frames = 0) =>
  writePng([
    { type: "IHDR", data: Uint8Array.from([...be32(w), ...be32(h), 8, 2, 0, 0, 0]) },
    ...(frames ? [{ type: "acTL", data: Uint8Array.from([...be32(frames), 0, 0, 0, 0]) }] : []),
    { type: "IDAT", data: new Uint8Array(4) },
    { type: "IEND", data: new Uint8Array(0) },
  ]);

t("pictures: within 40 MP, a 16,384 px edge and 400 MP over an animation's frames", () => {
  assert.ok(checkPicture(fixture("C.jpg")).ok);
  assert.ok(checkPicture(png(7000, 5700)).ok, "39.9 MP");
  assert.equal(checkPicture(png(16_000, 16_000)), {
    ok: false,
    size: { format: "png", width: 16_000, height: 16_000, frames: 1 },
    reason: "16000 x 16000 pixels is over the limit of 40 megapixels",
  });
  assert.not.ok(checkPicture(png(20_000, 100)).ok, "a strip past the edge limit");
  assert.ok(checkPicture(png(1000, 1000, 400)).ok, "400 MP of frames");
  assert.not.ok(checkPicture(png(1000, 1000, 401)).ok, "401 MP of frames");
  assert.equal(checkPicture(new Uint8Array([1, 2, 3])), {
    ok: false,
    size: null,
    reason: "its size cannot be read from its header",
  });
  assert.ok(
    checkPicture(png(8192, 8192), { maxLongEdge: 8192, maxMegapixels: 8192 ** 2 / 1e6 }).ok,
    "an area's own limit",
  );
});

const probe = (over: Partial<Probe> = {}, video: Record<string, unknown> = {}): Probe => ({
  durationSeconds: 10,
  formatName: "mov,mp4,m4a,3gp,3g2,mj2",
  sizeBytes: 1000,
  streams: [
    { index: 0, type: "video", codec: "h264", width: 1920, height: 1080, fps: 30, ...video },
    { index: 1, type: "audio", codec: "aac" },
  ],
  ...over,
});

t("probes: 8K frames, 240 fps, 4 hours, cover art as a still", () => {
  assert.is(probeOverBudget(probe()), null);
  assert.is(probeOverBudget(probe({}, { width: 7680, height: 4320, fps: 240 })), null);
  assert.is(probeOverBudget(probe({}, { width: 8704, height: 16 }))?.kind, "resolution");
  assert.is(probeOverBudget(probe({}, { fps: 1000 }))?.kind, "fps");
  assert.is(probeOverBudget(probe({ durationSeconds: MEDIA_BUDGETS.mediaSeconds + 1 }))?.kind, "duration");
  assert.is(probeOverBudget(probe({ durationSeconds: Number.NaN }))?.kind, "duration");
  assert.is(probeOverBudget(probe({}, { width: 50_000, height: 50_000, attachedPicture: true }))?.kind, "resolution");
});

t("child limits: prlimit in front when present, else the program with one warning", () => {
  const limits = { memoryMb: 4096, cpuSeconds: 3600 };
  assert.equal(limitedCommand("/usr/bin/ffmpeg", ["-i", "a"], limits, "/usr/bin/prlimit"), [
    "/usr/bin/prlimit",
    ["--as=4294967296", "--cpu=3600", "--", "/usr/bin/ffmpeg", "-i", "a"],
  ]);
  assert.equal(limitedCommand("/usr/bin/ffmpeg", ["-i", "a"], { memoryMb: 0, cpuSeconds: 5 }, "/usr/bin/prlimit"), [
    "/usr/bin/prlimit",
    ["--cpu=5", "--", "/usr/bin/ffmpeg", "-i", "a"],
  ]);
  assert.equal(limitedCommand("/usr/bin/ffmpeg", ["-i", "a"], { memoryMb: 0, cpuSeconds: 0 }, "/usr/bin/prlimit"), [
    "/usr/bin/ffmpeg",
    ["-i", "a"],
  ]);
  const warnings: string[] = [];
  assert.equal(
    limitedCommand("ffmpeg", [], limits, undefined, (m) => warnings.push(m)),
    ["ffmpeg", []],
  );
  limitedCommand("ffmpeg", [], limits, undefined, (m) => warnings.push(m));
  assert.is(warnings.length, 1);
});

t("wasm: a run past the CPU seconds (as wall time) is stopped and fails; the engine runs the next", async () => {
  // The bound counts wall time from the run's call, so the next run's worker start counts too: 10 s leaves a
  // loaded machine room to start a new worker (a 1 s bound failed the small run in a CI run), and an hour of
  // 720p is far more than any machine encodes in 10 s.
  const engine = createWasmEngine({ childLimits: { memoryMb: 512, cpuSeconds: 10 } });
  try {
    const err = await engine
      .run(
        ["-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=25:duration=3600", "-c:v", "mpeg4", "-f", "mp4", "big.mp4"],
        { outputs: ["big.mp4"] },
      )
      .then(
        () => null,
        (e: unknown) => e,
      );
    assert.ok(isMediaError(err) && err.code === "timeout", String(err));
    const out = await engine.run(
      ["-f", "lavfi", "-i", "testsrc2=size=64x64:rate=5:duration=0.4", "-c:v", "mpeg4", "-f", "mp4", "small.mp4"],
      { outputs: ["small.mp4"] },
    );
    assert.ok(out["small.mp4"]!.byteLength > 0);
  } finally {
    await engine.close();
  }
});

const native = detectNativeFfmpeg();
if (native && findOnPath("prlimit")) {
  t("native: a run over its CPU seconds is killed and fails; the engine runs the next", async () => {
    const engine = createNativeEngine({ ...native, concurrency: 1, childLimits: { memoryMb: 0, cpuSeconds: 1 } });
    try {
      const heavy = [
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=1920x1080:rate=25:duration=30",
        "-c:v",
        "libx264",
        "-preset",
        "slow",
        "-f",
        "mp4",
        "out.mp4",
      ];
      const err = await engine.run(heavy, { outputs: ["out.mp4"] }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(isMediaError(err), String(err));
      assert.match((err as Error & { detail: string }).detail, /killed by SIG(KILL|XCPU)/);
      const out = await engine.run(
        ["-f", "lavfi", "-i", "testsrc2=size=64x64:rate=5:duration=0.4", "-f", "mp4", "small.mp4"],
        { outputs: ["small.mp4"] },
      );
      assert.ok(out["small.mp4"]!.byteLength > 0);
    } finally {
      await engine.close();
    }
  });
}

t.run();
