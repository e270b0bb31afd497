// Video generation, animation and merging (spec part 2, "Video job", "Video models", "Video prices",
// "Animation prices", the video state table, the video endpoints and events).
//
// POST /generate-video validates every rule before the charge (input.ts), downloads and measures reference
// media before the charge too (references.ts: billing uses measured seconds; the job normalizes it), prices
// through the kernel's tier math (prices.ts) and queues one job (job.ts) that renders through `video.generate`
// (the sandbox by default). POST /generate-animation is the same job with two required frames, 8 s of 1080p
// with sound. POST /merge-videos is synchronous: charge, concatenate for real (merge.ts), refund on failure.
// The handlers are in operations.ts, the reads in records.ts, every text in errors.ts.
//
// Choices where the spec is silent, written down here:
// - Frames sent as base64 are kept with the job and shown as `start_frame_url` / `end_frame_url` media links;
//   frames sent by URL are downloaded by the job through the outbound guard (a failure ends the job `error`,
//   refunded) and reported as sent.
// - A merge is recorded as a job (`merge_id` is its id) so its charge and refund are ledger rows like any
//   other; merges are not video jobs and are not listed by GET /videos.
// - Merged files carry `expires_at` 7 days out ("kept about 7 days"); the kernel's retention sweeper removes them then.
import { definePlugin } from "mediagate/plugin";
import { mergeJob, videoJob } from "./job.ts";
import { videoMigrations } from "./migrations.ts";
import { videoOperations } from "./operations.ts";
import { VIDEO_COSTS } from "./prices.ts";
import { videoRecords } from "./records.ts";

export default definePlugin({
  name: "video",
  requires: ["video.generate", "media", "outbound", "counters"],
  provides: {
    // Files live in this plugin's blob store whichever area made them, so one media URL scheme serves all.
    "video.records": (host) => videoRecords(host.blobs.scoped("video"), (key) => host.mediaUrl("video", key)),
  },
  // Its videos, animations, upscales and merges, for captions (the records' own find answers them).
  contributes: { "captionable.videos": (host) => host.capability("video.records") },
  costs: VIDEO_COSTS,
  jobs: { video: videoJob, merge: mergeJob },
  operations: videoOperations,
  migrations: videoMigrations,
});
