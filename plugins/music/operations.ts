// The music endpoints (spec part 3: POST /generate-music, POST /extend-music, GET /music-status/<job_id>,
// GET /music). Both submits validate everything before the charge; index.ts says where the spec is silent.
import { randomBytes } from "node:crypto";
import {
  ApiError,
  type MusicModel,
  notFound,
  type OperationContext,
  operation,
  PAGE_BOUNDS,
  PRIVATE_KEY_PREFIX,
  pageBody,
  pageQuery,
  pageShape,
} from "mediagate/plugin";
import { z } from "zod";
import { MUSIC_ERRORS } from "./errors.ts";
import { IDEMPOTENCY_HEADER, idempotencyKeyOf, requestHash } from "./idempotency.ts";
import {
  checkAgainstSource,
  checkExtendControls,
  type ExtendControls,
  ExtendMusicInput,
  GenerateMusicInput,
} from "./input.ts";
import type { StoredInput } from "./job.ts";
import { LIMITS } from "./limits.ts";
import { DEFAULT_MODEL, musicPrice } from "./prices.ts";
import {
  findByIdempotencyKey,
  findJob,
  jobFields,
  listJobs,
  listView,
  MUSIC_TABLE,
  type MusicRow,
  statusView,
} from "./records.ts";
import { ownedSource, type PreparedSource, uploadedSource } from "./source.ts";

/** Uploaded sources are kept this long (the job and its retries), then swept. */
const UPLOAD_RETENTION_MS = 2 * 24 * 3600 * 1000;

function providerFor(ctx: OperationContext, model: MusicModel) {
  const provider = ctx.capability("music.generate").provider(model);
  if (!provider) throw new ApiError(503, MUSIC_ERRORS.notConfigured);
  return provider;
}

const submittedFields = {
  job_id: z.string(),
  partner_job_id: z.string().nullable(),
  status: z.string(),
  model: z.string(),
  credits_used: z.number().int(),
  credits_remaining: z.number().int(),
};

export const generateMusic = operation({
  method: "POST",
  path: "/generate-music",
  inflight: true,
  status: 202,
  summary: "Generate two music tracks (simple or custom mode)",
  input: GenerateMusicInput,
  output: z.object({ id: z.number().int(), ...submittedFields }),
  async handle(ctx) {
    const { partner_job_id, ...request } = ctx.input;
    providerFor(ctx, request.model);
    let id = 0;
    const job = await ctx.submitJob({
      kind: "music",
      state: "queued",
      credits: ctx.priceFor(musicPrice(request.model)),
      partnerJobId: partner_job_id,
      description: `Music generation (${request.model})`,
      input: { operation: "generate", request } satisfies StoredInput,
      async insertRecords(trx, [jobId]) {
        const row = await trx
          .insertInto(MUSIC_TABLE)
          .values({
            job_id: jobId!,
            partner_id: ctx.partner.id,
            operation: "generate",
            model: request.model,
            title: request.title,
            instrumental: request.instrumental,
          })
          .returning("id")
          .executeTakeFirstOrThrow();
        id = Number(row.id);
      },
    });
    return {
      id,
      job_id: job.jobId,
      partner_job_id,
      status: "queued",
      model: request.model,
      credits_used: job.creditsUsed,
      credits_remaining: job.creditsRemaining,
    };
  },
});

/**
 * `model` and `instrumental` as the request will have them, so a retry that spells out the default or the
 * source's own value is the same request as one that leaves it out. A source that is not the caller's changes
 * nothing here; it answers 404 later.
 */
function inheritedSpelledOut(c: ExtendControls, owned: MusicRow | undefined | null): ExtendControls {
  if (owned === null) return { ...c, model: c.model ?? DEFAULT_MODEL, instrumental: c.instrumental ?? false };
  if (!owned) return c;
  return { ...c, model: c.model ?? (owned.model as MusicModel), instrumental: c.instrumental ?? owned.instrumental };
}

/** The 200 of an identical retry: the first job as it is now, no charge. */
function replay(ctx: OperationContext, row: MusicRow, key: string) {
  ctx.setStatus(200);
  return {
    ...jobFields(row),
    credits_remaining: ctx.partner.creditsRemaining,
    idempotency_key: key,
    deduplicated: true,
  };
}

/** A key already used: the same request replays, a different one is a 409. */
function answerExisting(ctx: OperationContext, row: MusicRow, key: string, hash: string) {
  if (row.request_hash !== hash) throw new ApiError(409, MUSIC_ERRORS.idempotencyConflict);
  return replay(ctx, row, key);
}

export const extendMusic = operation({
  method: "POST",
  path: "/extend-music",
  status: 202,
  summary: "Extend an owned track (JSON) or an uploaded audio file (multipart); needs an Idempotency-Key header",
  input: ExtendMusicInput,
  requiredHeaders: IDEMPOTENCY_HEADER,
  // The spec's own Idempotency-Key rule for this endpoint (idempotency.ts), not the kernel's.
  idempotency: "own",
  multipart: {
    parameters: "parameters",
    files: ["audio"],
    unsupportedType: MUSIC_ERRORS.unsupportedType,
    // The upload cap plus room for the form's own bytes; the file itself is checked exactly in source.ts.
    maxBytes: LIMITS.uploadBytes + 1_000_000,
    tooLarge: MUSIC_ERRORS.uploadTooLarge,
    malformed: MUSIC_ERRORS.uploadUnreadable,
  },
  output: z.object({
    ...submittedFields,
    operation: z.string(),
    idempotency_key: z.string(),
    deduplicated: z.boolean().optional(),
  }),
  async handle(ctx) {
    const key = idempotencyKeyOf(ctx.request.headers);
    const upload = ctx.files.audio;
    const isMultipart = (ctx.request.headers.get("content-type") ?? "").toLowerCase().startsWith("multipart/");
    if (isMultipart && !upload) throw new ApiError(400, MUSIC_ERRORS.audioMissing);
    const checked = checkExtendControls(ctx.input as Record<string, unknown>, isMultipart);
    if (!checked.ok) throw new ApiError(400, checked.message);
    const controls = inheritedSpelledOut(
      checked.value,
      upload ? null : await findJob(ctx.db, ctx.partner.id, checked.value.source!.ref),
    );
    const partnerJobId = (ctx.input as { partner_job_id: string | null }).partner_job_id;
    const hash = await requestHash(controls, upload?.bytes);

    // An identical retry must answer even when the account could not pay again, so before anything else.
    const existing = await findByIdempotencyKey(ctx.db, ctx.partner.id, key);
    if (existing) return answerExisting(ctx, existing, key, hash);

    const engine = ctx.capability("media");
    const source: PreparedSource = upload
      ? await uploadedSource(engine, upload, ctx.request.signal)
      : await ownedSource(ctx, controls.source!);
    const decided = checkAgainstSource(controls, {
      model: source.model,
      instrumental: source.instrumental,
      seconds: source.seconds,
      direct: source.direct,
    });
    if (!decided.ok) throw new ApiError(400, decided.message);
    const { model, instrumental } = decided.value;
    providerFor(ctx, model);

    // An upload is written before the charge (the job may start at once) and removed if the charge fails.
    let sourceKey = source.key;
    if (source.bytes) {
      // Never shown to anyone: private, so `/media` does not serve it (docs/architecture.md "Media links").
      sourceKey = `${PRIVATE_KEY_PREFIX}uploads/${randomBytes(16).toString("hex")}.${source.extension}`;
      await ctx.blobs.put(sourceKey, source.bytes, { expiresAt: new Date(ctx.clock.now() + UPLOAD_RETENTION_MS) });
    }
    const operationName = source.direct ? "extend" : "upload_extend";
    const { source: _ref, model: _m, instrumental: _i, ...rest } = controls;
    const input: StoredInput = {
      operation: operationName,
      controls: { ...rest, model, instrumental },
      source: {
        key: sourceKey!,
        seconds: source.seconds,
        name: `source.${source.extension}`,
        arrangement: source.arrangement,
        title: source.title,
      },
    };
    try {
      const job = await ctx.submitJob({
        kind: "music",
        state: "queued",
        credits: ctx.priceFor(musicPrice(model)),
        partnerJobId,
        description: `Music extension (${model})`,
        input,
        insertRecords: (trx, [jobId]) =>
          trx
            .insertInto(MUSIC_TABLE)
            .values({
              job_id: jobId!,
              partner_id: ctx.partner.id,
              operation: operationName,
              model,
              title: controls.title || source.title,
              instrumental,
              idempotency_key: key,
              request_hash: hash,
            })
            .execute()
            .then(() => {}),
      });
      return {
        job_id: job.jobId,
        partner_job_id: partnerJobId,
        status: "queued",
        operation: operationName,
        model,
        credits_used: job.creditsUsed,
        credits_remaining: job.creditsRemaining,
        idempotency_key: key,
      };
    } catch (err) {
      if (source.bytes) await ctx.blobs.remove(sourceKey!).catch(() => {});
      // Lost a race under the same key (a duplicate key, or a 402 because the winner took the last credits):
      // the winner's job is the answer, a replay or a 409.
      const winner = await findByIdempotencyKey(ctx.db, ctx.partner.id, key);
      if (winner) return answerExisting(ctx, winner, key, hash);
      // Nothing was charged (see the header): the kernel's answer, never the spec's "Credits refunded" 502.
      throw err;
    }
  },
});

const trackOut = z.object({ audio_url: z.string(), image_url: z.string(), title: z.string(), duration: z.number() });

/** The fields a music job opens with in both its status and the list, in the order both show them. */
const jobOut = {
  job_id: z.string(),
  partner_job_id: z.string().nullable(),
  status: z.string(),
  operation: z.string(),
  model: z.string(),
};

export const musicStatus = operation({
  method: "GET",
  path: "/music-status/<job_id>",
  summary: "One music job: status, tracks when complete, error and error_code on failure",
  output: z.object({
    ...jobOut,
    credits_used: z.number().int(),
    tracks: z.array(trackOut).optional(),
    error: z.string().optional(),
    error_code: z.string().optional(),
  }),
  async handle(ctx) {
    const row = await findJob(ctx.db, ctx.partner.id, ctx.params.job_id!);
    if (!row) throw notFound(MUSIC_ERRORS.jobNotFound);
    return statusView(row, ctx.mediaUrl);
  },
});

export const listMusic = operation({
  method: "GET",
  path: "/music",
  summary: "This account's music jobs, newest first",
  input: pageQuery(PAGE_BOUNDS.music),
  output: pageShape(
    "music",
    z.object({
      ...jobOut,
      title: z.string().nullable(),
      credits_used: z.number().int(),
      tracks: z.array(trackOut),
      created_at: z.string(),
      completed_at: z.string().nullable(),
    }),
  ),
  async handle(ctx) {
    return pageBody("music", await listJobs(ctx.db, ctx.partner.id, ctx.input), ctx.input, (row) =>
      listView(row, ctx.mediaUrl),
    );
  },
});
