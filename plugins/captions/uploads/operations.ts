// Uploaded caption sources (spec part 2 "POST /captions/upload", "Chunked upload"; part 1's captions rate
// limits and open-session limit): the single multipart upload and the chunked session's init, part,
// finalize and abort. Both end in submitCaption (submit.ts) with the stored keys; nothing here charges.
//
// Memory: a single upload is one multipart body of at most 95 MB; a chunked part is one raw body of at most
// chunk_size bytes (the kernel's `rawBody` cap), stored as its own blob. The parts are never joined: the
// MP4 check walks them (mp4-check.ts `partsSource`, one part held at a time) and the caption job reads them
// in order as one streamed input (source.ts). A 1 GB upload never needs more than a part or two in memory.
//
// Choices where the spec is silent (also in docs/areas/captions.md):
// - A third open session is 429 `tooManySessions` (the spec lists the limit, not its status; 429 is its
//   status for the other per-account caps). A finalizing session still holds its slot; a finalized one not.
// - Sessions take parts for RETENTION.abandonedSessionHours after init; then they are abandoned: their
//   requests answer 404 and they are deleted, with their parts, by the next init of any account (that
//   account's and up to SWEEP_OTHERS others'); each part blob is also stored with an expiry, so the kernel's
//   retention sweeper removes it even if no init ever comes.
// - Part blobs expire RETENTION.uploadedSourceDays after the session's end, so a session finalized at its
//   last moment still keeps its source the spec's 2 days (the blob cannot be re-dated without rewriting it;
//   a part may so outlive the job's `source_expires_at` by up to the session's window).
// - Finalize `style` replaces the session's style as a whole (it "overrides" it); absent, the session's is
//   used. A `partner_job_id` sent to finalize must equal the session's (400 `partnerJobIdFixed`).
// - A part's body above chunk_size is a 400 (the spec's "part size"), refused while it streams; the single
//   upload's form above 95 MB (plus the form's own bytes) is the 413 before it is read whole.
// - Without a speech recognizer (no pocketsphinx, no CAPTIONS_TRANSCRIBE_URL: transcribe/index.ts
//   uploadRecognizers) the single upload, init and a first finalize answer 503 `uploadsNotConfigured` before
//   anything is stored or charged: an uploaded file has no spoken record of ours, so its speech could only
//   fail after the charge. Parts and abort still answer (a session opened before stays usable and removable),
//   and a finalize repeated after success still answers its job.
// - Every refusal before the charge leaves nothing new: a session is a row only once init succeeds, a part
//   is written only once its size is right (and removed again if the session went away meanwhile), and a
//   single upload's file is removed if the charge fails.
import { randomBytes } from "node:crypto";
import {
  ApiError,
  defineInput,
  field,
  notFound,
  type OperationContext,
  operation,
  type PluginDb,
  PRIVATE_KEY_PREFIX,
} from "mediagate/plugin";
import { z } from "zod";
import { CAPTIONS_FEATURE, captionsConfig } from "../config.ts";
import { CAPTION_ERRORS } from "../errors.ts";
import { DAY_MS, LIMITS, RETENTION } from "../limits.ts";
import { captionPrice } from "../prices.ts";
import { captionView, findCaption, retentionOf } from "../records.ts";
import { retentionOut, submittedOut } from "../schemas.ts";
import { checkStyle, resolveStyle } from "../style/input.ts";
import { submitCaption } from "../submit.ts";
import { uploadRecognizers } from "../transcribe/index.ts";
import type { CaptionStyle } from "../types.ts";
import { type ByteSource, bytesSource, checkMp4, type Mp4Verdict, PartChanged, partsSource } from "./mp4-check.ts";
import {
  beginFinalize,
  completeFinalize,
  createSession,
  deleteSession,
  expiredSessions,
  findSession,
  forgetParts,
  inUploadTransaction,
  isExpired,
  isFinalizing,
  lockSession,
  missingParts,
  partSizeOf,
  partsOf,
  recordPart,
  releaseFinalize,
  type SessionRow,
} from "./records.ts";

/** Expired sessions of other accounts removed by one init. */
const SWEEP_OTHERS = 20;
const FILENAME_MAX = 255;
/** Room for the multipart form's own bytes around a 95 MB file. */
const FORM_OVERHEAD = 1_000_000;
const UPLOAD_PREFIX = `${PRIVATE_KEY_PREFIX}uploads/`;

const token = () => randomBytes(8).toString("hex");
const storageError = (ctx: OperationContext, err: unknown): never => {
  ctx.log.error("captions upload storage failed", err);
  throw new ApiError(503, CAPTION_ERRORS.storageUnavailable);
};

/** The 503 before anything is stored or charged when no recognizer could transcribe an uploaded file. */
function requireRecognizer(ctx: OperationContext): void {
  if (uploadRecognizers(captionsConfig.of(ctx)).length === 0)
    throw new ApiError(503, CAPTION_ERRORS.uploadsNotConfigured);
}

/** A partial style as sent: an object (JSON body) or its JSON text (a multipart field). */
function partialStyle(raw: unknown, fail: (m: string) => never): Partial<CaptionStyle> {
  let value = raw ?? {};
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      fail(CAPTION_ERRORS.styleNotObject);
    }
  }
  const style = checkStyle(value);
  if (!style.ok) fail(style.message);
  return style.value;
}

/** The partner's 400 for each refusal of the MP4 check. */
const MP4_REFUSALS: Record<Extract<Mp4Verdict, { ok: false }>["reason"], string> = {
  noVideo: CAPTION_ERRORS.noVideoStream,
  tooLong: CAPTION_ERRORS.tooLong,
  notMp4: CAPTION_ERRORS.notMp4,
};

/** The MP4 verdict as the partner's 400, or the duration in seconds. */
async function checkedSeconds(src: ByteSource): Promise<number> {
  const verdict = await checkMp4(src, { maxSeconds: LIMITS.maxSeconds });
  if (verdict.ok) return verdict.seconds;
  throw new ApiError(400, MP4_REFUSALS[verdict.reason]);
}

// --- POST /captions/upload --------------------------------------------------------------------------------

const SingleUploadInput = defineInput({
  fields: {
    style: field.string({ description: "A partial caption style object, JSON-encoded" }),
    partner_job_id: field.partnerJobId(),
  },
  check: (raw, fail) => ({ style: partialStyle(raw.style, fail), partner_job_id: raw.partner_job_id }),
});

const singleUpload = operation({
  method: "POST",
  path: "/captions/upload",
  feature: CAPTIONS_FEATURE,
  status: 202,
  summary: "Burn captions into an uploaded MP4 (multipart: video, style, partner_job_id)",
  input: SingleUploadInput,
  multipart: {
    fields: ["style", "partner_job_id"],
    files: ["video"],
    unsupportedType: CAPTION_ERRORS.unsupportedMultipart,
    maxBytes: LIMITS.singleUploadBytes + FORM_OVERHEAD,
    tooLarge: CAPTION_ERRORS.singleTooLarge,
    malformed: CAPTION_ERRORS.malformedMultipart,
  },
  output: submittedOut,
  async handle(ctx) {
    requireRecognizer(ctx);
    const video = ctx.files.video;
    if (!video || video.bytes.byteLength === 0) throw new ApiError(400, CAPTION_ERRORS.videoFileMissing);
    if (video.bytes.byteLength > LIMITS.singleUploadBytes) throw new ApiError(413, CAPTION_ERRORS.singleTooLarge);
    const seconds = await checkedSeconds(bytesSource(video.bytes));
    const style = resolveStyle(ctx.input.style);
    const key = `${UPLOAD_PREFIX}${token()}${token()}.mp4`;
    const expiresAt = new Date(ctx.clock.now() + RETENTION.uploadedSourceDays * DAY_MS);
    await ctx.blobs
      .put(key, video.bytes, { contentType: "video/mp4", expiresAt })
      .catch((err) => storageError(ctx, err));
    try {
      return await submitCaption(ctx, {
        source: { kind: "upload", keys: [key], bytes: video.bytes.byteLength, seconds },
        style,
        partnerJobId: ctx.input.partner_job_id,
      });
    } catch (err) {
      // Refused (402, 429, 503): the file goes too; a file left by a crash here expires in 2 days.
      await ctx.blobs.remove(key).catch(() => {});
      throw err;
    }
  },
});

// --- POST /captions/uploads/init --------------------------------------------------------------------------

const InitInput = defineInput({
  fields: {
    filename: field.string({ description: "The file's name (only for your reference)", maxLength: FILENAME_MAX }),
    size_bytes: field.integer({ description: "The file's exact size", minimum: 1, maximum: LIMITS.chunkedMaxBytes }),
    partner_job_id: field.partnerJobId(),
    style: field.object({ description: "Any subset of the caption style object; finalize may override it" }),
  },
  required: ["filename", "size_bytes"],
  check(raw, fail) {
    const { filename, size_bytes: size } = raw;
    if (typeof filename !== "string" || filename.trim() === "" || filename.length > FILENAME_MAX)
      fail(CAPTION_ERRORS.filenameRequired);
    if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 1) fail(CAPTION_ERRORS.sizeInvalid);
    if (raw.style !== undefined && raw.style !== null && (typeof raw.style !== "object" || Array.isArray(raw.style)))
      fail(CAPTION_ERRORS.styleNotObject);
    return {
      filename: filename as string,
      size_bytes: size as number,
      partner_job_id: raw.partner_job_id,
      style: partialStyle(raw.style, fail),
    };
  },
});

const sessionOut = {
  session_id: z.string(),
  partner_job_id: z.string().nullable(),
  chunk_size: z.number().int(),
  part_count: z.number().int(),
  max_bytes: z.number().int(),
  max_seconds: z.number().int(),
  credits: z.number().int(),
  retention: retentionOut,
};

/** Removes blobs whose rows are gone; a failure leaves them to their retention expiry. */
async function removeBlobs(ctx: OperationContext, keys: readonly string[]): Promise<void> {
  for (const key of keys)
    await ctx.blobs
      .remove(key)
      .catch((err) => ctx.log.warn(`captions: could not remove ${key}: ${(err as Error).message}`));
}

const initUpload = operation({
  method: "POST",
  path: "/captions/uploads/init",
  feature: CAPTIONS_FEATURE,
  status: 202,
  summary: "Open a chunked upload session (files up to 1 GB); init, parts and abort never charge",
  input: InitInput,
  output: z.object(sessionOut),
  async handle(ctx) {
    if (ctx.input.size_bytes > LIMITS.chunkedMaxBytes) throw new ApiError(413, CAPTION_ERRORS.chunkedTooLarge);
    requireRecognizer(ctx);
    const credits = captionPrice(ctx); // a custom account without a rate gets its 400 before a session exists
    const now = ctx.clock.now();
    await removeBlobs(ctx, await expiredSessions(ctx.db, ctx.partner.id, new Date(now), SWEEP_OTHERS));
    const expiresAt = new Date(now + RETENTION.abandonedSessionHours * 3600 * 1000);
    const session = await createSession(ctx.db, {
      partnerId: ctx.partner.id,
      filename: ctx.input.filename,
      sizeBytes: ctx.input.size_bytes,
      partnerJobId: ctx.input.partner_job_id,
      style: JSON.stringify(ctx.input.style),
      expiresAt,
      partsExpireAt: new Date(expiresAt.getTime() + RETENTION.uploadedSourceDays * DAY_MS),
    });
    if (!session) throw new ApiError(429, CAPTION_ERRORS.tooManySessions, {}, { "Retry-After": "10" });
    return {
      session_id: session.id,
      partner_job_id: session.partner_job_id,
      chunk_size: LIMITS.chunkSize,
      part_count: session.part_count,
      max_bytes: LIMITS.chunkedMaxBytes,
      max_seconds: LIMITS.maxSeconds,
      credits,
      retention: retentionOf("upload"),
    };
  },
});

/** This account's live session of the path, or the 404 (none, another account's, or abandoned). */
async function liveSession(ctx: OperationContext): Promise<SessionRow> {
  const s = await findSession(ctx.db, ctx.partner.id, ctx.params.session_id!);
  if (!s || (s.state !== "finalized" && isExpired(s, ctx.clock.now()))) throw notFound(CAPTION_ERRORS.sessionNotFound);
  return s;
}

// --- POST /captions/uploads/<session_id>/part/<index> -----------------------------------------------------

const INDEX = /^(0|[1-9][0-9]{0,8})$/;

const uploadPart = operation({
  method: "POST",
  path: "/captions/uploads/<session_id>/part/<index>",
  feature: CAPTIONS_FEATURE,
  summary:
    "One part of a chunked upload: raw application/octet-stream, chunk_size bytes except the exact last remainder",
  rawBody: {
    contentTypes: ["application/octet-stream"],
    maxBytes: LIMITS.chunkSize,
    tooLarge: (p) => CAPTION_ERRORS.partSize(INDEX.test(p.index ?? "") ? Number(p.index) : 0, LIMITS.chunkSize),
    tooLargeStatus: 400,
    unsupportedType: CAPTION_ERRORS.partContentType,
  },
  output: z.object({
    index: z.number().int(),
    received_parts: z.number().int(),
    received_bytes: z.number().int(),
    total_bytes: z.number().int(),
  }),
  async handle(ctx) {
    const s = await liveSession(ctx);
    if (s.state === "finalized") throw new ApiError(409, CAPTION_ERRORS.sessionClosed);
    if (await isFinalizing(ctx.leases, ctx.db, s)) throw new ApiError(409, CAPTION_ERRORS.sessionFinalizing);
    const raw = ctx.params.index!;
    const index = INDEX.test(raw) ? Number(raw) : -1;
    if (index < 0 || index >= s.part_count) throw new ApiError(400, CAPTION_ERRORS.partIndexInvalid);
    const body = ctx.body!;
    const expected = partSizeOf(s, index);
    if (body.byteLength !== expected) throw new ApiError(400, CAPTION_ERRORS.partSize(index, expected));

    // Written under a name of its own, then switched to in the session's lock: a part sent again replaces
    // the earlier one atomically (a reader sees the old or the new, never half of one).
    const key = `${UPLOAD_PREFIX}${s.id}/${index}-${token()}.part`;
    await ctx.blobs.put(key, body, { expiresAt: new Date(s.parts_expire_at) }).catch((err) => storageError(ctx, err));
    let outcome: { replaced: string | null; parts: number; bytes: number };
    try {
      outcome = await inUploadTransaction(ctx.db, async (trx) => {
        const locked = await lockSession(trx, ctx.partner.id, s.id);
        const now = ctx.clock.now();
        if (!locked || (locked.state !== "finalized" && isExpired(locked, now)))
          throw notFound(CAPTION_ERRORS.sessionNotFound);
        if (locked.state === "finalized") throw new ApiError(409, CAPTION_ERRORS.sessionClosed);
        if (await isFinalizing(ctx.leases, trx, locked)) throw new ApiError(409, CAPTION_ERRORS.sessionFinalizing);
        return recordPart(trx, s.id, { idx: index, key, bytes: body.byteLength });
      });
    } catch (err) {
      await removeBlobs(ctx, [key]);
      throw err;
    }
    if (outcome.replaced) await removeBlobs(ctx, [outcome.replaced]);
    return { index, received_parts: outcome.parts, received_bytes: outcome.bytes, total_bytes: s.size_bytes };
  },
});

// --- POST /captions/uploads/<session_id>/finalize ---------------------------------------------------------

const FinalizeInput = defineInput({
  fields: {
    style: field.object({ description: "Overrides the session's style (as a whole)" }),
    partner_job_id: field.partnerJobId({ message: CAPTION_ERRORS.partnerJobIdFixed }),
  },
  check(raw, fail) {
    if (raw.style !== undefined && raw.style !== null && (typeof raw.style !== "object" || Array.isArray(raw.style)))
      fail(CAPTION_ERRORS.styleNotObject);
    return {
      style: raw.style === undefined || raw.style === null ? null : partialStyle(raw.style, fail),
      partner_job_id: raw.partner_job_id,
    };
  },
});

/** The answer to a finalize repeated after success: the same job, 200, nothing charged. */
async function finalizedAnswer(ctx: OperationContext, jobId: string): Promise<Record<string, unknown>> {
  const row = await findCaption(ctx.db, ctx.partner.id, jobId);
  if (!row) throw notFound(CAPTION_ERRORS.sessionNotFound);
  ctx.setStatus(200);
  return {
    ...captionView(row, { now: ctx.clock.now(), mediaUrl: ctx.mediaUrl, videoAvailable: null }),
    credits_remaining: await ctx.account.balance(ctx.partner.id),
  };
}

const finalizeUpload = operation({
  method: "POST",
  path: "/captions/uploads/<session_id>/finalize",
  feature: CAPTIONS_FEATURE,
  status: 202,
  summary: "Check the uploaded MP4, charge once and start the caption job; a repeat answers the same job (200)",
  input: FinalizeInput,
  output: submittedOut,
  async handle(ctx) {
    const s = await liveSession(ctx);
    if (ctx.input.partner_job_id !== null && ctx.input.partner_job_id !== s.partner_job_id)
      throw new ApiError(400, CAPTION_ERRORS.partnerJobIdFixed);
    if (s.state === "finalized") return finalizedAnswer(ctx, s.job_id!);
    requireRecognizer(ctx);

    // Take the session (one finalize at a time), with its parts as they are now.
    type Taken = { done: string } | { token: string; parts: Awaited<ReturnType<typeof partsOf>> };
    const taken = await inUploadTransaction(ctx.db, async (trx): Promise<Taken> => {
      const locked = await lockSession(trx, ctx.partner.id, s.id);
      if (!locked) throw notFound(CAPTION_ERRORS.sessionNotFound);
      if (locked.state === "finalized") return { done: locked.job_id! };
      if (await isFinalizing(ctx.leases, trx, locked)) throw new ApiError(409, CAPTION_ERRORS.sessionFinalizing);
      const parts = await partsOf(trx, s.id);
      const missing = missingParts(locked, parts);
      if (missing.length > 0) throw new ApiError(409, CAPTION_ERRORS.partsMissing, { missing });
      return { token: await beginFinalize(trx, ctx.leases, s.id, new Date(ctx.clock.now())), parts };
    });
    if ("done" in taken) return finalizedAnswer(ctx, taken.done);
    const { token: tok, parts } = taken;

    try {
      // A part whose file is gone (storage lost it) is missing like one never sent: its row goes, and the
      // 409 names it with the others, so the partner sends it again.
      const vanished: typeof parts = [];
      for (const p of parts) if (!(await ctx.blobs.has(p.key))) vanished.push(p);
      if (vanished.length > 0) {
        await forgetParts(ctx.db, s.id, vanished);
        throw new ApiError(409, CAPTION_ERRORS.partsMissing, { missing: vanished.map((p) => p.idx) });
      }
      const src = partsSource(
        parts.map((p) => ({
          size: p.bytes,
          read: async () => {
            const bytes = await ctx.blobs.get(p.key);
            if (!bytes) throw new PartChanged();
            return bytes;
          },
        })),
      );
      if (src.size !== s.size_bytes) throw new ApiError(400, CAPTION_ERRORS.sessionSizeMismatch);
      let seconds: number;
      try {
        seconds = await checkedSeconds(src);
      } catch (err) {
        if (err instanceof PartChanged) throw new ApiError(503, CAPTION_ERRORS.storageUnavailable);
        throw err;
      }
      const style = resolveStyle(ctx.input.style ?? (JSON.parse(s.style) as Partial<CaptionStyle>));
      // The session is marked finalized in the charge's own transaction: charged and finalized together, or
      // neither (a crash between them cannot leave a charge a repeated finalize would not find).
      const finalized = async (trx: PluginDb, jobId: string) => {
        if (!(await completeFinalize(trx, ctx.leases, s, tok, jobId)))
          throw new ApiError(409, CAPTION_ERRORS.sessionFinalizing);
      };
      const source = { kind: "upload" as const, keys: parts.map((p) => p.key), bytes: s.size_bytes, seconds };
      return await submitCaption(ctx, { source, style, partnerJobId: s.partner_job_id, inCharge: finalized });
    } catch (err) {
      await releaseFinalize(ctx.db, ctx.leases, s.id, tok).catch(() => {});
      throw err;
    }
  },
});

// --- POST /captions/uploads/<session_id>/abort ------------------------------------------------------------

const abortUpload = operation({
  method: "POST",
  path: "/captions/uploads/<session_id>/abort",
  feature: CAPTIONS_FEATURE,
  summary: "Remove an open upload session and its stored parts",
  output: z.object({ ok: z.boolean(), session_id: z.string() }),
  async handle(ctx) {
    const s = await liveSession(ctx);
    const keys = await inUploadTransaction(ctx.db, async (trx) => {
      const locked = await lockSession(trx, ctx.partner.id, s.id);
      if (!locked) throw notFound(CAPTION_ERRORS.sessionNotFound);
      if (locked.state === "finalized") throw new ApiError(409, CAPTION_ERRORS.sessionClosed);
      if (await isFinalizing(ctx.leases, trx, locked)) throw new ApiError(409, CAPTION_ERRORS.sessionFinalizing);
      return deleteSession(trx, s.id);
    });
    await removeBlobs(ctx, keys);
    return { ok: true, session_id: s.id };
  },
});

/** The five upload operations, in the spec's order. */
export const uploadOperations = [singleUpload, initUpload, uploadPart, finalizeUpload, abortUpload];
