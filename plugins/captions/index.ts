// Captions (spec part 2 "Caption job", "Caption style object", "Caption jobs", the caption endpoints, errors
// and limits; part 1's rate limits, the active caption job cap and the `captions` feature switch).
//
// A caption job reads a source video (one of the account's videos, whichever area made it, through the
// `captionable.videos` collection: source.ts; or an upload: uploads/), transcribes it through `speech.transcribe` (provided here: transcribe/), cuts
// the words into cards in the chosen chunking (render/cards.ts, measured with the font's real metrics), writes
// them as an ASS script in the chosen style (render/ass.ts) and burns it with libass on the media engine
// (render/burn.ts) into a new MP4. The partner can then read the cards, edit them and have them re-burned free
// of charge (operations.ts, job.ts).
//
// Where the spec is silent, the choices are written beside the code that makes them: records.ts (status,
// pruning, availability), errors.ts (the texts), uploads/ (sessions), job.ts (states), render/cards.ts (timing).
import { definePlugin } from "mediagate/plugin";
import { CAPTIONS_FEATURE, captionsConfig } from "./config.ts";
import { captionJob, reburnJob } from "./job.ts";
import { captionMigrations } from "./migrations.ts";
import { captionChunks, captionStatus, createCaption, editCaption, listCaptionJobs } from "./operations.ts";
import { CAPTION_COSTS } from "./prices.ts";
import { styleOptions } from "./style/operations.ts";
import { createTranscriber } from "./transcribe/index.ts";
import { uploadMigrations } from "./upload-migrations.ts";
import { uploadOperations } from "./uploads/operations.ts";

export default definePlugin({
  name: "captions",
  requires: ["media", "outbound"],
  // The account's videos, from every area that makes them (none registered: every video id is a 404).
  collects: ["captionable.videos"],
  provides: {
    "speech.transcribe": (host) => createTranscriber(host),
  },
  config: captionsConfig,
  costs: CAPTION_COSTS,
  features: [CAPTIONS_FEATURE],
  operations: [
    styleOptions,
    createCaption,
    ...uploadOperations,
    captionStatus,
    listCaptionJobs,
    captionChunks,
    editCaption,
  ],
  jobs: { caption: captionJob, reburn: reburnJob },
  migrations: [...captionMigrations, ...uploadMigrations],
});
