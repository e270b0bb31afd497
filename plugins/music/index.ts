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
import { randomBytes } from "node:crypto";
import { z } from "zod";
import { ApiError, definePlugin, isTransient, JobFailure, type JobKindDeclaration, type JobRunContext, type MusicControls, type MusicErrorCode, type MusicModel, MusicProviderError, type MusicProviders, type MusicTrack, notFound, operation, type OperationContext, PAGE_BOUNDS, pageBody, pageQuery, pageShape, PRIVATE_KEY_PREFIX, QUEUED_PROCESSING_COMPLETE, UpstreamTimeoutError } from "mediagate/plugin";
import { FAILURE_TEXTS, MUSIC_ERRORS } from "./errors.ts";
import { IDEMPOTENCY_HEADER, idempotencyKeyOf, requestHash } from "./idempotency.ts";
import { checkAgainstSource, checkExtendControls, ExtendMusicInput, GenerateMusicInput, type ExtendControls, type GenerateRequest } from "./input.ts";
import { musicMigrations } from "./migrations.ts";
import { CREDITS_PER_GENERATION, DEFAULT_MODEL, LIMITS, MUSIC_COSTS, PROVIDER_TIMEOUT_MS } from "./models.ts";
import { findByIdempotencyKey, findJob, jobFields, listJobs, listView, MUSIC_TABLE, statusView, type MusicRow, type StoredTrack } from "./records.ts";
import { ownedSource, uploadedSource, type PreparedSource } from "./source.ts";

const UPLOAD_RETENTION_MS = 2 * 24 * 3600 * 1000;

/** What the job reads back: the request as validated, and where an extension's source audio is. */
type StoredInput =
  | { operation: "generate"; request: GenerateRequest }
  | {
      operation: "extend" | "upload_extend";
      controls: MusicControls & { model: MusicModel; instrumental: boolean };
      source: { key: string; seconds: number; name: string; arrangement: Record<string, unknown> | null; title: string | null };
    };

// ---------------------------------------------------------------------------------------------------------
// The job: one upstream wait for two variations, stored.

function failureCode(err: unknown): MusicErrorCode {
  if (err instanceof MusicProviderError) return err.code;
  if (err instanceof UpstreamTimeoutError) return "timeout";
  return "provider_down";
}

async function storeTracks(ctx: JobRunContext, tracks: MusicTrack[]): Promise<StoredTrack[]> {
  const stored: StoredTrack[] = [];
  for (const [i, t] of tracks.entries()) {
    // Unguessable names: media links are capability URLs (DESIGN "Media links"); a rerun writes new ones.
    const name = `${ctx.jobId}-${i}-${randomBytes(16).toString("hex")}`;
    const audioKey = `tracks/${name}.mp3`;
    const imageKey = `covers/${name}.${t.coverMimeType === "image/png" ? "png" : "jpg"}`;
    await ctx.blobs.put(audioKey, t.audio, { contentType: "audio/mpeg" });
    await ctx.blobs.put(imageKey, t.cover, { contentType: t.coverMimeType });
    stored.push({ audio_key: audioKey, image_key: imageKey, title: t.title, duration: Math.round(t.duration * 100) / 100, arrangement: t.arrangement });
  }
  return stored;
}

const musicJob: JobKindDeclaration<StoredInput> = {
  ...QUEUED_PROCESSING_COMPLETE,
  failError: FAILURE_TEXTS.provider_down,
  retries: 1,
  // One attempt: a poll of the upstream, then (once it is done) the tracks' download or render and storage.
  // The wait itself spans attempts and has its own deadline (PROVIDER_TIMEOUT_MS); this is a backstop for a
  // worker that hangs.
  timeoutSeconds: PROVIDER_TIMEOUT_MS / 1000 + 300,
  concurrency: 2,
  async run(ctx) {
    // Runs again from the top at every poll of the upstream (ctx.awaitUpstream parks the attempt while the
    // work is pending): what comes before the wait is cheap and idempotent; the request is built once, at submit.
    if (ctx.state === "queued") await ctx.moveTo("processing", "Composing");
    const input = ctx.input;
    const model = input.operation === "generate" ? input.request.model : input.controls.model;
    const provider = ctx.capability("music.generate").provider(model);
    const wait = {
      deadlineSeconds: PROVIDER_TIMEOUT_MS / 1000,
      onProgress: async (fraction: number) => ctx.progress(Math.floor(5 + Math.max(0, Math.min(1, fraction)) * 85), "Composing"),
    };

    let tracks: MusicTrack[];
    try {
      if (!provider) throw new MusicProviderError("provider_down", `no provider for ${model}`);
      if (input.operation === "generate") {
        const r = input.request;
        tracks = await ctx.awaitUpstream("generate", provider.generate, () => r, wait);
      } else {
        tracks = await ctx.awaitUpstream(
          "extend",
          provider.extend,
          // The source audio is read once, when the job submits.
          async () => {
            const { key, ...source } = input.source;
            const bytes = await ctx.blobs.get(key);
            if (!bytes) throw new MusicProviderError("input_rejected", "the source audio is gone");
            return { ...input.controls, source: { ...source, bytes } };
          },
          wait,
        );
      }
      if (tracks.length === 0) throw new Error("no tracks");
    } catch (err) {
      // A transient error (the database or an upstream briefly out of reach) is the runtime's to retry.
      if (ctx.signal.aborted || isTransient(err)) throw err;
      const code = failureCode(err);
      // The provider's own words stay in our log; the partner gets the sanitized text and the code.
      ctx.log.warn(`music ${ctx.jobId}: provider failed (${code}): ${err instanceof Error ? err.message : String(err)}`);
      await ctx.db.updateTable(MUSIC_TABLE).set({ error_code: code }).where("job_id", "=", ctx.jobId).execute();
      throw new JobFailure(FAILURE_TEXTS[code]);
    }

    await ctx.progress(92, "Saving");
    const stored = await storeTracks(ctx, tracks);
    await ctx.db
      .updateTable(MUSIC_TABLE)
      .set((eb: any) => ({ tracks: JSON.stringify(stored), title: eb.fn.coalesce("title", eb.val(stored[0]!.title)) }))
      .where("job_id", "=", ctx.jobId)
      .execute();
    return { state: "complete", output: { tracks: stored.length } };
  },
};

// ---------------------------------------------------------------------------------------------------------
// Submitting.

function providerFor(ctx: OperationContext<any>, model: MusicModel) {
  const provider = ctx.capability("music.generate").provider(model);
  if (!provider) throw new ApiError(503, MUSIC_ERRORS.notConfigured);
  return provider;
}

const price = (ctx: OperationContext<any>, model: MusicModel) => ctx.priceFor({ lines: [{ key: ["music", "models", model], rate: CREDITS_PER_GENERATION, units: 1 }] });

const submittedFields = {
  job_id: z.string(),
  partner_job_id: z.string().nullable(),
  status: z.string(),
  model: z.string(),
  credits_used: z.number().int(),
  credits_remaining: z.number().int(),
};

const generateMusic = operation({
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
      credits: price(ctx, request.model),
      partnerJobId: partner_job_id,
      description: `Music generation (${request.model})`,
      input: { operation: "generate", request } satisfies StoredInput,
      async within(trx, [jobId]) {
        const row = await trx
          .insertInto(MUSIC_TABLE)
          .values({ job_id: jobId!, partner_id: ctx.partner.id, operation: "generate", model: request.model, title: request.title, instrumental: request.instrumental })
          .returning("id")
          .executeTakeFirstOrThrow();
        id = Number(row.id);
      },
    });
    return { id, job_id: job.jobId, partner_job_id, status: "queued", model: request.model, credits_used: job.creditsUsed, credits_remaining: job.creditsRemaining };
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
function replay(ctx: OperationContext<any>, row: MusicRow, key: string) {
  ctx.setStatus(200);
  return {
    ...jobFields(row),
    credits_remaining: ctx.partner.creditsRemaining,
    idempotency_key: key,
    deduplicated: true,
  };
}

/** A key already used: the same request replays, a different one is a 409. */
function answerExisting(ctx: OperationContext<any>, row: MusicRow, key: string, hash: string) {
  if (row.request_hash !== hash) throw new ApiError(409, MUSIC_ERRORS.idempotencyConflict);
  return replay(ctx, row, key);
}

const extendMusic = operation({
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
  output: z.object({ ...submittedFields, operation: z.string(), idempotency_key: z.string(), deduplicated: z.boolean().optional() }),
  async handle(ctx) {
    const key = idempotencyKeyOf(ctx.request.headers);
    const upload = ctx.files.audio;
    const isMultipart = (ctx.request.headers.get("content-type") ?? "").toLowerCase().startsWith("multipart/");
    if (isMultipart && !upload) throw new ApiError(400, MUSIC_ERRORS.audioMissing);
    const checked = checkExtendControls(ctx.input as Record<string, unknown>, isMultipart);
    if (!checked.ok) throw new ApiError(400, checked.message);
    const controls = inheritedSpelledOut(checked.value, upload ? null : await findJob(ctx.db, ctx.partner.id, checked.value.source!.ref));
    const partnerJobId = (ctx.input as { partner_job_id: string | null }).partner_job_id;
    const hash = await requestHash(controls, upload?.bytes);

    // An identical retry must answer even when the account could not pay again, so before anything else.
    const existing = await findByIdempotencyKey(ctx.db, ctx.partner.id, key);
    if (existing) return answerExisting(ctx, existing, key, hash);

    const engine = ctx.capability("media");
    const source: PreparedSource = upload ? await uploadedSource(engine, upload, ctx.request.signal) : await ownedSource(ctx, controls.source!);
    const decided = checkAgainstSource(controls, { model: source.model, instrumental: source.instrumental, seconds: source.seconds, direct: source.direct });
    if (!decided.ok) throw new ApiError(400, decided.message);
    const { model, instrumental } = decided.value;
    providerFor(ctx, model);

    // An upload is written before the charge (the job may start at once) and removed if the charge fails.
    let sourceKey = source.key;
    if (source.bytes) {
      // Never shown to anyone: private, so `/media` does not serve it (DESIGN "Media links").
      sourceKey = `${PRIVATE_KEY_PREFIX}uploads/${randomBytes(16).toString("hex")}.${source.extension}`;
      await ctx.blobs.put(sourceKey, source.bytes, { expiresAt: new Date(ctx.clock.now() + UPLOAD_RETENTION_MS) });
    }
    const operationName = source.direct ? "extend" : "upload_extend";
    const { source: _ref, model: _m, instrumental: _i, ...rest } = controls;
    const input: StoredInput = {
      operation: operationName,
      controls: { ...rest, model, instrumental },
      source: { key: sourceKey!, seconds: source.seconds, name: `source.${source.extension}`, arrangement: source.arrangement, title: source.title },
    };
    try {
      const job = await ctx.submitJob({
        kind: "music",
        state: "queued",
        credits: price(ctx, model),
        partnerJobId,
        description: `Music extension (${model})`,
        input: input as unknown as Record<string, unknown>,
        within: (trx, [jobId]) =>
          trx
            .insertInto(MUSIC_TABLE)
            .values({ job_id: jobId!, partner_id: ctx.partner.id, operation: operationName, model, title: controls.title || source.title, instrumental, idempotency_key: key, request_hash: hash })
            .execute()
            .then(() => {}),
      });
      return { job_id: job.jobId, partner_job_id: partnerJobId, status: "queued", operation: operationName, model, credits_used: job.creditsUsed, credits_remaining: job.creditsRemaining, idempotency_key: key };
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

const musicStatus = operation({
  method: "GET",
  path: "/music-status/<job_id>",
  summary: "One music job: status, tracks when complete, error and error_code on failure",
  output: z.object({
    job_id: z.string(),
    partner_job_id: z.string().nullable(),
    status: z.string(),
    operation: z.string(),
    model: z.string(),
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

const listMusic = operation({
  method: "GET",
  path: "/music",
  summary: "This account's music jobs, newest first",
  input: pageQuery(PAGE_BOUNDS.music),
  output: pageShape(
    "music",
    z.object({
      job_id: z.string(),
      partner_job_id: z.string().nullable(),
      status: z.string(),
      operation: z.string(),
      model: z.string(),
      title: z.string().nullable(),
      credits_used: z.number().int(),
      tracks: z.array(trackOut),
      created_at: z.string(),
      completed_at: z.string().nullable(),
    }),
  ),
  async handle(ctx) {
    return pageBody("music", await listJobs(ctx.db, ctx.partner.id, ctx.input), ctx.input, (row) => listView(row, ctx.mediaUrl));
  },
});

export default definePlugin({
  name: "music",
  requires: ["music.generate", "media"],
  costs: MUSIC_COSTS,
  operations: [generateMusic, extendMusic, musicStatus, listMusic],
  jobs: { music: musicJob },
  migrations: musicMigrations,
});
