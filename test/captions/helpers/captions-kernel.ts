// The kernel the captions API tests run against: account, video (with its sandbox) and captions, started, on
// PGlite with the memory stores or on Postgres with Redis beside it (counters, pub/sub), as production runs.
import type { MediaEngine } from "../../../lib/media/index.ts";
import account from "../../../plugins/account/index.ts";
import captions from "../../../plugins/captions/index.ts";
import video from "../../../plugins/video/index.ts";
import videoSandbox from "../../../plugins/video/sandbox.ts";
import { createTestKernel, type TestKernel } from "../../../testkit/index.ts";
import { type DatabaseBackend, isolatedPostgresDatabase, redisUrl } from "../../helpers/backends.ts";

/** Account limits for the captions tests: room for many jobs, and rates no test reaches. */
export const CAPTIONS_LIMITS = {
  inflight_jobs: 50,
  rate_limits: {
    "POST /generate-video": 10_000,
    "GET /video-status/<job_id>": 100_000,
    "POST /captions": 10_000,
    "POST /captions/upload": 10_000,
    "GET /captions/<job_id>": 100_000,
    "GET /captions": 10_000,
    "GET /captions/<job_id>/chunks": 10_000,
    "POST /captions/<job_id>/edit": 10_000,
    "GET /credits": 10_000,
  },
};

export async function startCaptionsKernel(backend: DatabaseBackend): Promise<TestKernel> {
  const postgres = backend.name === "postgres";
  return createTestKernel({
    plugins: [account, videoSandbox, video, captions],
    databaseUrl: postgres ? await isolatedPostgresDatabase() : undefined,
    redisUrl: postgres ? await redisUrl() : undefined,
    env: { PUBLIC_URL: "https://media.example.test" },
    start: true,
  });
}

/** The luma plane of the frame at `t` seconds, width × height bytes. */
export async function lumaAt(engine: MediaEngine, mp4: Uint8Array, t: number): Promise<Uint8Array> {
  const out = await engine.run(
    ["-ss", t.toFixed(3), "-i", "in.mp4", "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "gray", "frame.raw"],
    { inputs: { "in.mp4": mp4 }, outputs: ["frame.raw"] },
  );
  return out["frame.raw"]!;
}

/** The caption job `id` once it is neither pending nor processing (polled every 100 ms, for up to 240 s). */
export async function captionDone(tk: TestKernel, key: string, id: string) {
  const end = Date.now() + 240_000;
  for (;;) {
    const r = await tk.request("GET", `/captions/${id}`, { key });
    if (!["pending", "processing"].includes(r.body.status)) return r.body;
    if (Date.now() > end) throw new Error(`caption ${id}: still not done: ${JSON.stringify(r.body).slice(0, 400)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
