// Music (spec part 3, "Music job", the music states, POST /generate-music, POST /extend-music,
// GET /music-status/<job_id>, GET /music; part 1 for `costs.music`, the in-flight cap and rate limits).
//
// Both submits validate everything before the charge, charge the flat price through the kernel's tier math,
// and queue one job that asks `music.generate` (the sandbox by default) for two variations, stores their
// audio and cover art under permanent media links, and ends `complete`, or `error` with an `error_code`
// (refunded). The job submits to the provider and polls it (ctx.awaitUpstream, contracts/upstream.ts), so
// while the upstream composes the job holds no worker slot. Extension adds the Idempotency-Key contract
// (idempotency.ts) and two forms: an owned track (JSON) or an uploaded file (multipart), both measured before
// the charge (source.ts).
//
// Choices where the spec is silent, written down here:
// - An owned track extends "directly" (`operation` extend) when our provider made it and kept its
//   arrangement; otherwise its stored audio is restaged like an upload (`upload_extend`).
// - Uploaded sources are kept 2 days (long enough for the job and its retries), then swept.
// - The 202 of an extension echoes the caller's own `idempotency_key` (the spec lists it there); status and
//   list never show it.
// - "Music generation failed to start. Credits refunded." (502) is what a submit answers if the job could not
//   be handed to the workers after the charge. Here the charge and the queue entry commit in one
//   transaction, so that cannot happen: a failed submit charges nothing and must not claim a refund. It is the
//   kernel's answer (core/errors.ts outageError): 503 with Retry-After for a database out of reach, 507
//   "... Nothing was charged; retry later." for a full disk, else 500.
// - A job whose provider has not delivered 10 minutes after the submit ends `error` with `error_code` timeout
//   (the upstream's work is cancelled where the provider can).
import { definePlugin } from "mediagate/plugin";
import { musicJob } from "./job.ts";
import { musicMigrations } from "./migrations.ts";
import { extendMusic, generateMusic, listMusic, musicStatus } from "./operations.ts";
import { MUSIC_COSTS } from "./prices.ts";

export default definePlugin({
  name: "music",
  requires: ["music.generate", "media"],
  costs: MUSIC_COSTS,
  operations: [generateMusic, extendMusic, musicStatus, listMusic],
  jobs: { music: musicJob },
  migrations: musicMigrations,
});
