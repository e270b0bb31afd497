// What the sandbox media tests share (test/video/media.test.ts, test/video/spoken-media.test.ts): a provider
// request with every field the sandbox reads, and a suite's engine (made before its tests, closed after) with
// the sandbox's beta-2-direct route rendering on it.
import type { Test } from "uvu";
import type { VideoGenerationRequest } from "../../contracts/video.ts";
import { createMediaEngine, type MediaEngine } from "../../lib/media/index.ts";
import type { InPlace } from "../../lib/upstream.ts";
import { sandboxVideoProvider } from "../../plugins/video/sandbox.ts";

type Request = InPlace<VideoGenerationRequest>;

/** A sandbox request for a paper boat, no references; `over` sets the size, length, sound or anything else. */
export const sandboxRequest = (over: Partial<Request>): Request => ({
  prompt: "A paper boat drifting on a stream",
  negativePrompt: null,
  model: "beta-2-direct",
  width: 480,
  height: 270,
  seconds: 2,
  sound: false,
  referenceImages: [],
  referenceVideos: [],
  referenceAudio: [],
  signal: new AbortController().signal,
  onProgress() {},
  ...over,
});

/** The suite's engine on `mode` (`on.engine`, set before its tests) and the sandbox route on it. */
export function sandboxOnEngine(t: Test, mode: "native" | "wasm") {
  const on = {
    engine: undefined as unknown as MediaEngine,
    sandbox: () => sandboxVideoProvider({ latencyMs: 0, media: () => on.engine }).route("beta-2-direct")!,
  };
  t.before(() => {
    on.engine = createMediaEngine({ mode });
  });
  t.after(async () => {
    await on.engine.close();
  });
  return on;
}
