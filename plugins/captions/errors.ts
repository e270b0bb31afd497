// Every text the captions area answers with, in one place. Spec part 2 gives the statuses of the caption
// endpoints ("Errors", caption endpoints) but not their words; the words below are ours, chosen to say what a
// partner must change, and never a media tool's message ("fixed sanitized error text").
import { LIMITS } from "./limits.ts";

const n = (x: number) => x.toLocaleString("en-US");

export const CAPTION_ERRORS = {
  // POST /captions
  videoJobIdRequired: "video_job_id is required",
  videoJobIdInvalid: "Invalid video_job_id: give the job_id of one of your completed videos",
  videoNotFound: "Video not found",
  videoNotComplete: "Video is not complete yet",
  sourceBusy: "This video already has an active caption job",
  tooManyActive: "Too many active caption jobs for this partner. Wait for some to finish and retry.",
  sourcePruned: "The source video is no longer available",
  insufficientCredits: (need: number) => `Insufficient credits. Captions cost ${need} credits.`,

  // style (style/input.ts builds the field-level texts from these)
  styleNotObject: "style must be an object",
  styleUnknownField: (field: string) => `Unknown style field: ${field}`,
  styleInvalid: (field: string, allowed: string) => `Invalid style.${field}. Allowed: ${allowed}`,

  // POST /captions/upload and chunked uploads
  unsupportedMultipart: "Content-Type must be multipart/form-data",
  malformedMultipart: "Could not read the multipart body",
  videoFileMissing: "Please upload an MP4 file in the 'video' field",
  singleTooLarge: `Video too large (max ${n(LIMITS.singleUploadBytes)} bytes)`,
  chunkedTooLarge: `Video too large (max ${n(LIMITS.chunkedMaxBytes)} bytes)`,
  notMp4: "The file is not a readable MP4 video",
  noVideoStream: "The MP4 has no video stream",
  tooLong: `Video is too long (max ${LIMITS.maxSeconds} seconds)`,
  filenameRequired: "filename is required",
  sizeInvalid: "size_bytes must be a positive integer",
  tooManySessions: `Too many open upload sessions (max ${LIMITS.openSessions}). Finalize or abort one first.`,
  sessionNotFound: "Upload session not found",
  partContentType: "Content-Type must be application/octet-stream",
  partIndexInvalid: "Invalid part index",
  partSize: (index: number, expected: number) => `Part ${index} must be exactly ${n(expected)} bytes`,
  partsMissing: "Upload parts missing",
  sessionFinalizing: "Finalization already in progress",
  sessionClosed: "This upload session is already finalized",
  sessionSizeMismatch: "The uploaded parts do not add up to size_bytes",
  partnerJobIdFixed: "partner_job_id cannot change after init",
  storageUnavailable: "Upload storage is temporarily unavailable, retry shortly",
  // 503 of POST /captions/upload, /captions/uploads/init and finalize when no speech recognizer is available
  // (neither pocketsphinx installed nor CAPTIONS_TRANSCRIBE_URL set; transcribe/index.ts uploadRecognizers),
  // before any charge. The spec's 503 row for the caption endpoints names only storage and queueing, and part
  // 1 lists "not configured" among the 503s without words for captions; ours follow the spec's own texts for
  // an unconfigured area ("Voiceover service is not configured.", "Music generation is not configured."),
  // naming what cannot be served: generated videos are still captioned from their spoken records.
  uploadsNotConfigured: "Captions for uploaded videos are not configured.",

  // GET /captions/<job_id>, chunks, edit
  jobNotFound: "Caption job not found",
  chunksRequired: "chunks must be an array",
  chunkInvalid: "Each chunk needs numeric start and end and a text string",
  tooManyChunks: `Too many chunks (max ${LIMITS.editMaxChunks})`,
  chunkTextTooLong: `Caption text must be ${LIMITS.editMaxText} characters or less`,
  chunkTiming: `Invalid chunk timing: 0 <= start < end <= ${LIMITS.editMaxSeconds}`,
  noCaptionLeft: "At least one non-empty caption must remain",
  notEditable: "This caption job is not editable",
  editInProgress: "Editing already in progress",
  // The spec's other 503, "the job or re-burn could not be queued safely", has no text of its own here: a job
  // and its queue message are sent in the charge's one transaction (core/jobs.ts, the outbox), so a queue that
  // cannot take it is a database outage, answered before any charge by the kernel's 503 with Retry-After
  // (KERNEL_ERRORS.serviceUnavailable, test/api/outages.test.ts).
} as const;

/** The sanitized `error` of terminal caption jobs. */
export const CAPTION_FAILURES = {
  failed: "Caption rendering failed",
  noSpeech: "No usable speech was found in the video",
  sourceGone: "The source video is no longer available",
} as const;
