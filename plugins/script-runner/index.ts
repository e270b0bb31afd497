// The Script Runner (spec part 3, "Script Runner run", "Script Runner", its errors and limits): a script of
// scenes becomes, per scene, one 9:16 frame (`image.generate`) and one clip (`video.generate`, the frame as its
// start) at the model's default duration and 720p.
//
// Money: the run is one job charged once (cost_per_scene x scenes, plus one frame when the character is
// drawn from a description, the tier applied to the total and rounded up once). The charge is split into
// refundable parts (the kernel's `refundableShares`): one per scene and one for the character frame, each its
// standard-basis cost, and the tier's difference as the last (prices.ts `refundParts`, capped at the charge).
// A failed scene returns its part, once, right when it fails; the run ends `complete`, `partial` (some scenes failed), or `error` (none succeeded: every part
// comes back). A run killed mid-way resumes after restart with the scenes it had not finished; a part is
// never returned twice (job_shares + the ledger's unique refund row per part).
//
// Choices where the spec is silent, written down here:
// - Script format details: parser.ts. `setting` is the scene block's text, `dialogue` its DIALOGUE blocks'.
// - The frame prompt is the setting with the character's description (or "the character of the reference
//   image"); both modes give the frame the character image as its reference; character-locked also hands it
//   to the video model as a reference image, scene-driven gives the video model only the start frame.
// - A character drawn from a description is a 9:16 frame of its own, drawn first; if it fails, the run ends
//   `error` and everything is refunded.
// - Scene entries show `start_image_url` once the frame exists (null before) and `video_url` only once
//   complete; `error` only on a failed scene. `updated_at` is the run's job's last change.
// - Progress (GraphQL `jobUpdates`): the share of scenes finished, as a percent.
// - A run waits on its scenes' frames and clips in place (`pollToEnd`), holding its worker slot: its scenes
//   run several at once inside one job, and a job parks on one upstream wait at a time (ctx.awaitUpstream).
import { definePlugin } from "mediagate/plugin";
import { captionableRuns } from "./captionable.ts";
import { runnerConfig } from "./config.ts";
import { runJob } from "./job.ts";
import { runnerMigrations } from "./migrations.ts";
import { listRuns, runStatus, submitRun } from "./operations.ts";

export default definePlugin({
  name: "script-runner",
  requires: ["image.generate", "video.generate", "outbound", "media"],
  config: runnerConfig,
  jobs: { run: runJob },
  // A finished run's scene clips, joined, for captions (captionable.ts).
  contributes: { "captionable.videos": captionableRuns },
  operations: [submitRun, runStatus, listRuns],
  migrations: runnerMigrations,
});
