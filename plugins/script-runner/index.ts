// The Script Runner (spec part 3, "Script Runner run", "Script Runner", its errors and limits): a script of
// scenes becomes, per scene, one 9:16 frame (`image.generate`) and one clip (`video.generate`, the frame as its
// start) at the model's default duration and 720p.
//
// Money: the run is one job charged once (cost_per_scene x scenes, plus one frame when the character is
// drawn from a description, the tier applied to the total and rounded up once). The charge is split into
// refundable parts (the kernel's `refundableShares`): one per scene and one for the character frame, each its
// standard-basis cost, and the tier's difference as the last (limits.ts `refundParts`, capped at the charge).
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
import { z } from "zod";
import {
  ApiError,
  checkPicture,
  decodeImageBase64,
  formatTimestamp,
  IMAGE_EXT,
  imageKind,
  type JobKindDeclaration,
  type JobRunContext,
  JobFailure,
  jobRecords,
  limitParam,
  mediaToken,
  notFound,
  offsetParam,
  operation,
  type OutboundGuard,
  PAGE_BOUNDS,
  pageBody,
  pageShape,
  partnerJobIdField,
  PRIVATE_KEY_PREFIX,
  pollToEnd,
  definePlugin,
  type VideoFrame,
  isOutboundError,
  isTransient,
} from "mediagate/plugin";
import type { ColumnType } from "kysely";
import { RUNNER_ERRORS } from "./errors.ts";
import { costPerScene, DEFAULT_IMAGE_MODEL, DEFAULT_MODEL, DEFAULT_NAME, FRAME, IMAGE_MODEL_IDS, IMAGE_MODELS, LIMITS, MODEL_IDS, refundParts, runPrice, type RunnerImageModel, type RunnerModel, VIDEO_MODELS } from "./limits.ts";
import { captionableRuns } from "./captionable.ts";
import { runnerConfig } from "./config.ts";
import { runnerMigrations } from "./migrations.ts";
import { parseScript } from "./parser.ts";

const RUNS = "script_runs";
const SCENES = "script_scenes";
const JOB_ID = /^svc-[0-9a-f]{8}$/;
const IMAGE_FETCH_TIMEOUT_MS = 30_000;

interface RunRow {
  job_id: string;
  partner_id: string;
  name: string;
  model: string;
  image_model: string;
  use_as_character_reference: boolean;
  character_source: "url" | "upload" | "description";
  character_key: string | null;
  character_mime: string | null;
  character_description: string | null;
  cost_per_scene: number;
  scene_count: number;
  created_at: ColumnType<Date, Date | string | undefined, never>;
}

interface SceneRow {
  job_id: string;
  idx: number;
  name: string;
  setting: string;
  dialogue: string;
  status: "processing" | "complete" | "error";
  start_image_key: string | null;
  video_key: string | null;
  error: string | null;
}

const runs = jobRecords<RunRow>(RUNS, { jobId: "job_id", newestFirst: ["created_at", "job_id"] });

// ---------------------------------------------------------------------------------------------------------
// The run.

async function scenesOf(db: JobRunContext["db"], jobId: string): Promise<SceneRow[]> {
  return (await db.selectFrom(SCENES).selectAll().where("job_id", "=", jobId).orderBy("idx", "asc").execute()) as SceneRow[];
}

const runJob: JobKindDeclaration<Record<string, never>> = {
  states: ["processing", "complete", "partial", "error"],
  initial: "processing",
  transitions: { processing: ["complete", "partial", "error"] },
  terminal: { complete: "success", partial: "success", error: "failure" },
  failState: "error",
  failError: RUNNER_ERRORS.runFailed,
  retries: 1,
  timeoutSeconds: 3600,
  concurrency: 2,
  async run(ctx) {
    const run = (await ctx.db.selectFrom(RUNS).selectAll().where("job_id", "=", ctx.jobId).executeTakeFirstOrThrow()) as RunRow;
    const model = run.model as RunnerModel;
    const imageModel = run.image_model as RunnerImageModel;
    const character = await characterImage(ctx, run);
    if (!character) {
      await ctx.db.updateTable(SCENES).set({ status: "error", error: RUNNER_ERRORS.characterFailed }).where("job_id", "=", ctx.jobId).where("status", "=", "processing").execute();
      throw new JobFailure(RUNNER_ERRORS.characterFailed);
    }

    let scenes = await scenesOf(ctx.db, ctx.jobId);
    const total = scenes.length;
    let finished = scenes.filter((s) => s.status !== "processing").length;
    // A retry returns what an earlier attempt's failed scenes were owed (at most once: a no-op when done).
    for (const s of scenes) if (s.status === "error") await ctx.refundShare(s.idx);
    const queue = scenes.filter((s) => s.status === "processing");
    const worker = async () => {
      for (let s = queue.shift(); s; s = queue.shift()) {
        await renderScene(ctx, run, s, character, model, imageModel);
        finished++;
        await ctx.progress(Math.floor((finished / total) * 100), `${finished} of ${total} scenes done`);
      }
    };
    await Promise.all(Array.from({ length: Math.min(runnerConfig.of(ctx).scenesAtOnce, queue.length) }, worker));

    scenes = await scenesOf(ctx.db, ctx.jobId);
    const complete = scenes.filter((s) => s.status === "complete").length;
    if (complete === 0) throw new JobFailure(RUNNER_ERRORS.runFailed);
    return { state: complete === total ? "complete" : "partial" };
  },
};

/** The run's character picture: stored at submit, or drawn from the description once (and kept). Null if drawing fails. */
async function characterImage(ctx: JobRunContext, run: RunRow): Promise<VideoFrame | null> {
  if (run.character_key) {
    const bytes = await ctx.blobs.get(run.character_key);
    if (!bytes) throw new JobFailure(RUNNER_ERRORS.runFailed);
    return { bytes, mimeType: run.character_mime ?? "image/png" };
  }
  const provider = ctx.capability("image.generate").route(IMAGE_MODELS[run.image_model as RunnerImageModel].route);
  try {
    if (!provider) throw new Error("no image provider");
    const image = await pollToEnd(provider, { prompt: `Character portrait: ${run.character_description ?? ""}`, model: run.image_model, ...FRAME, background: "auto", index: 0, references: [], signal: ctx.signal, onProgress: () => {} });
    const key = `${PRIVATE_KEY_PREFIX}characters/${ctx.jobId}-${mediaToken()}.png`;
    await ctx.blobs.put(key, image.bytes, { contentType: image.mimeType });
    await ctx.db.updateTable(RUNS).set({ character_key: key, character_mime: image.mimeType }).where("job_id", "=", ctx.jobId).execute();
    return { bytes: image.bytes, mimeType: image.mimeType };
  } catch (err) {
    if (ctx.signal.aborted || isTransient(err)) throw err;
    ctx.log.warn(`script runner ${ctx.jobId}: character frame failed: ${err instanceof Error ? err.message : String(err)}`);
    return null;
  }
}

/** One scene: its frame, then its clip; a failure marks the scene and returns its part of the charge. */
async function renderScene(ctx: JobRunContext, run: RunRow, scene: SceneRow, character: VideoFrame, model: RunnerModel, imageModel: RunnerImageModel) {
  const locked = run.use_as_character_reference;
  const who = run.character_description?.trim() || "the character of the reference image";
  try {
    let frame: VideoFrame;
    const stored = scene.start_image_key ? await ctx.blobs.get(scene.start_image_key) : null;
    if (stored) frame = { bytes: stored, mimeType: "image/png" };
    else {
      const provider = ctx.capability("image.generate").route(IMAGE_MODELS[imageModel].route);
      if (!provider) throw new Error("no image provider");
      const image = await pollToEnd(provider, {
        prompt: `${scene.setting}\nFeaturing ${who}.`,
        model: imageModel,
        ...FRAME,
        background: "auto",
        index: scene.idx,
        references: [{ id: `character-${run.job_id}`, mimeType: character.mimeType, read: async () => character.bytes }],
        signal: ctx.signal,
        onProgress: () => {},
      });
      frame = { bytes: image.bytes, mimeType: image.mimeType };
      const key = `frames/${run.job_id}-${scene.idx}-${mediaToken()}.png`;
      await ctx.blobs.put(key, image.bytes, { contentType: image.mimeType });
      await ctx.db.updateTable(SCENES).set({ start_image_key: key }).where("job_id", "=", run.job_id).where("idx", "=", scene.idx).execute();
    }
    const provider = ctx.capability("video.generate").forModel(model);
    if (!provider) throw new Error(`no video provider for ${model}`);
    const clip = await pollToEnd(provider, {
      prompt: [scene.setting, scene.dialogue].filter(Boolean).join("\n"),
      negativePrompt: null,
      model,
      ...FRAME,
      seconds: VIDEO_MODELS[model].seconds,
      sound: false,
      startFrame: frame,
      referenceImages: locked ? [character] : [],
      referenceVideos: [],
      referenceAudio: [],
      signal: ctx.signal,
      onProgress: () => {},
    });
    const key = `clips/${run.job_id}-${scene.idx}-${mediaToken()}.mp4`;
    await ctx.blobs.put(key, clip.bytes, { contentType: "video/mp4" });
    await ctx.db.updateTable(SCENES).set({ video_key: key, status: "complete" }).where("job_id", "=", run.job_id).where("idx", "=", scene.idx).execute();
  } catch (err) {
    if (ctx.signal.aborted || isTransient(err)) throw err;
    ctx.log.warn(`script runner ${run.job_id} scene ${scene.idx + 1} failed: ${err instanceof Error ? err.message : String(err)}`);
    await ctx.db.updateTable(SCENES).set({ status: "error", error: RUNNER_ERRORS.sceneFailed }).where("job_id", "=", run.job_id).where("idx", "=", scene.idx).execute();
    await ctx.refundShare(scene.idx);
  }
}

// ---------------------------------------------------------------------------------------------------------
// The request.

const RunInput = z
  .object({
    character_image_url: z.unknown().optional().meta({ type: "string", description: "public http(s) image URL; wins over the other sources" }),
    character_image_base64: z.unknown().optional().meta({ type: "string", description: "PNG/JPEG/WEBP as base64, a data: prefix is stripped, about 20 MB" }),
    prompt: z.unknown().optional().meta({ type: "string", description: "the script: === SCENE: <name> ===, === DIALOGUE <n> ===, optionally === CHARACTER ===", maxLength: LIMITS.promptChars }),
    name: z.unknown().optional().meta({ type: "string", maxLength: LIMITS.nameChars, default: DEFAULT_NAME }),
    use_as_character_reference: z.unknown().optional().meta({ type: "boolean", default: true }),
    model: z.unknown().optional().meta({ type: "string", enum: MODEL_IDS, default: DEFAULT_MODEL }),
    image_model: z.unknown().optional().meta({ type: "string", enum: IMAGE_MODEL_IDS, default: DEFAULT_IMAGE_MODEL }),
    partner_job_id: partnerJobIdField().meta({ type: "string" }),
  })
  .meta({ required: ["prompt"] })
  .transform((raw, c) => {
    const fail = (message: string) => (c.addIssue({ code: "custom", message }), z.NEVER);
    if (typeof raw.prompt !== "string" || raw.prompt.trim() === "") return fail(RUNNER_ERRORS.promptRequired);
    if (raw.prompt.length > LIMITS.promptChars) return fail(RUNNER_ERRORS.promptTooLong);
    const name = raw.name ?? DEFAULT_NAME;
    if (typeof name !== "string") return fail(RUNNER_ERRORS.nameType);
    if (name.length > LIMITS.nameChars) return fail(RUNNER_ERRORS.nameTooLong);
    const locked = raw.use_as_character_reference ?? true;
    if (typeof locked !== "boolean") return fail(RUNNER_ERRORS.useAsReference);
    const text = (v: unknown) => (typeof v === "string" && v !== "" ? v : null);
    return {
      prompt: raw.prompt,
      name: name.trim() || DEFAULT_NAME,
      locked,
      model: raw.model ?? DEFAULT_MODEL,
      imageModel: raw.image_model ?? DEFAULT_IMAGE_MODEL,
      imageUrl: text(raw.character_image_url),
      imageBase64: text(raw.character_image_base64),
      partnerJobId: raw.partner_job_id,
    };
  });

/** The image at a character URL (http or https, never a private address), before any charge. */
async function fetchCharacter(guard: OutboundGuard, url: string, signal: AbortSignal): Promise<VideoFrame> {
  const checked = guard.checkUrl(url, { allowHttp: true });
  if (!checked.ok) throw new ApiError(400, RUNNER_ERRORS.invalidCharacterUrl(checked.kind === "not_public" ? "private, loopback and link-local addresses are not allowed" : checked.reason));
  let body: Uint8Array;
  try {
    body = (await guard.fetch(checked.url, { allowHttp: true, maxBytes: LIMITS.characterImageBytes, timeoutMs: IMAGE_FETCH_TIMEOUT_MS, signal })).body;
  } catch (err) {
    if (signal.aborted || !isOutboundError(err)) throw err;
    const reason = err.kind === "not_public" ? "private, loopback and link-local addresses are not allowed" : err.kind === "too_large" ? "larger than 20 MB" : err.kind === "http_status" ? `the server answered ${err.status}` : "could not be downloaded";
    throw new ApiError(400, RUNNER_ERRORS.invalidCharacterUrl(reason));
  }
  const mimeType = imageKind(body);
  if (!mimeType) throw new ApiError(400, RUNNER_ERRORS.invalidCharacterUrl("not a PNG, JPEG or WEBP image"));
  const budget = checkPicture(body); // lib/media/budgets.ts: by its header, before anything decodes it
  if (!budget.ok) throw new ApiError(400, RUNNER_ERRORS.invalidCharacterUrl(budget.reason));
  return { bytes: body, mimeType };
}

const PARSE_ERRORS = { no_scenes: RUNNER_ERRORS.noScenes, no_dialogue: RUNNER_ERRORS.noDialogue, too_many_scenes: RUNNER_ERRORS.tooManyScenes } as const;

const sceneShape = z.object({
  name: z.string(),
  status: z.enum(["processing", "complete", "error"]),
  setting: z.string(),
  dialogue: z.string(),
  start_image_url: z.string().nullable(),
  video_url: z.string().optional(),
  error: z.string().optional(),
});

const runShape = z.object({
  job_id: z.string(),
  partner_job_id: z.string().nullable(),
  name: z.string(),
  status: z.enum(["processing", "complete", "partial", "error"]),
  scene_count: z.number().int(),
  scenes_complete: z.number().int(),
  scenes: z.array(sceneShape),
  credits_charged: z.number().int(),
  credits_refunded: z.number().int(),
  model: z.string(),
  image_model: z.string(),
  cost_per_scene: z.number().int(),
  error: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

const submitRun = operation({
  method: "POST",
  path: "/script-runner",
  status: 202,
  inflight: true,
  summary: "A frame and a clip per scene of a script",
  input: RunInput,
  // A 20 MB character image is about 28 MB of base64; the decoded size is checked exactly.
  maxBodyBytes: 30_000_000,
  bodyTooLarge: RUNNER_ERRORS.characterTooLarge,
  output: z.object({
    job_id: z.string(),
    partner_job_id: z.string().nullable(),
    status: z.literal("processing"),
    scene_count: z.number().int(),
    credits_used: z.number().int(),
    credits_remaining: z.number().int(),
    model: z.string(),
    image_model: z.string(),
    cost_per_scene: z.number().int(),
  }),
  async handle(ctx) {
    const req = ctx.input;
    if (typeof req.model !== "string" || !Object.hasOwn(VIDEO_MODELS, req.model)) throw new ApiError(400, RUNNER_ERRORS.invalidModel, { allowed_models: MODEL_IDS });
    if (typeof req.imageModel !== "string" || !Object.hasOwn(IMAGE_MODELS, req.imageModel)) throw new ApiError(400, RUNNER_ERRORS.invalidImageModel, { allowed_image_models: IMAGE_MODEL_IDS });
    const model = req.model as RunnerModel;
    const imageModel = req.imageModel as RunnerImageModel;
    const parsed = parseScript(req.prompt);
    if (!parsed.ok) throw new ApiError(400, parsed.reason === "bad_dialogue" ? RUNNER_ERRORS.badDialogue(parsed.detail ?? "") : PARSE_ERRORS[parsed.reason]);
    const { scenes, character: description } = parsed.script;

    // One character source: the URL wins, then the upload, then a CHARACTER block (its description ignored otherwise).
    let image: VideoFrame | null = null;
    let source: RunRow["character_source"];
    if (req.imageUrl) {
      image = await fetchCharacter(ctx.capability("outbound"), req.imageUrl, ctx.request.signal);
      source = "url";
    } else if (req.imageBase64) {
      const decoded = decodeImageBase64(req.imageBase64, LIMITS.characterImageBytes);
      if (!decoded.ok) throw decoded.reason === "too_large" ? new ApiError(413, RUNNER_ERRORS.characterTooLarge) : new ApiError(400, RUNNER_ERRORS.characterBase64);
      if (!checkPicture(decoded.image.bytes).ok) throw new ApiError(400, RUNNER_ERRORS.characterBase64); // over the pixel budget
      image = decoded.image;
      source = "upload";
    } else if (description) source = "description";
    else throw new ApiError(400, RUNNER_ERRORS.noCharacter);

    const drawCharacter = source === "description";
    const credits = ctx.priceFor({ ...runPrice(model, imageModel, scenes.length, drawCharacter), customRateMissing: RUNNER_ERRORS.customNoRate });
    const perScene = costPerScene(model, imageModel);
    const parts = refundParts(credits, [...scenes.map(() => perScene), ...(drawCharacter ? [IMAGE_MODELS[imageModel].frame] : [])]);

    const key = image ? `${PRIVATE_KEY_PREFIX}characters/${mediaToken()}.${IMAGE_EXT[image.mimeType as keyof typeof IMAGE_EXT] ?? "img"}` : null;
    if (image && key) await ctx.blobs.put(key, image.bytes, { contentType: image.mimeType });
    try {
      const job = await ctx.submitJob({
        kind: "run",
        state: "processing",
        credits,
        refundableShares: parts,
        partnerJobId: req.partnerJobId,
        description: `Script Runner: ${scenes.length} scenes, ${model}, ${imageModel}`,
        insufficientCredits: RUNNER_ERRORS.insufficient,
        input: {},
        within: async (trx, [jobId]) => {
          await trx
            .insertInto(RUNS)
            .values({
              job_id: jobId!,
              partner_id: ctx.partner.id,
              name: req.name,
              model,
              image_model: imageModel,
              use_as_character_reference: req.locked,
              character_source: source,
              character_key: key,
              character_mime: image?.mimeType ?? null,
              character_description: drawCharacter ? description : null,
              cost_per_scene: perScene,
              scene_count: scenes.length,
            })
            .execute();
          for (const [idx, s] of scenes.entries()) {
            await trx.insertInto(SCENES).values({ job_id: jobId!, idx, name: s.name, setting: s.setting, dialogue: s.dialogue }).execute();
          }
        },
      });
      return {
        job_id: job.jobId,
        partner_job_id: req.partnerJobId,
        status: "processing" as const,
        scene_count: scenes.length,
        credits_used: job.creditsUsed,
        credits_remaining: job.creditsRemaining,
        model,
        image_model: imageModel,
        cost_per_scene: perScene,
      };
    } catch (err) {
      if (key) await ctx.blobs.remove(key).catch(() => {});
      throw err;
    }
  },
});

/**
 * A scene as the run shows it. A scene still marked processing in a run that has ended (its last attempt died:
 * the kernel failed and refunded the run) reads as failed, with the run's error.
 */
function sceneView(s: SceneRow, runEnded: boolean, mediaUrl: (key: string) => string) {
  const status = runEnded && s.status === "processing" ? "error" : s.status;
  return {
    name: s.name,
    status,
    setting: s.setting,
    dialogue: s.dialogue,
    start_image_url: s.start_image_key ? mediaUrl(s.start_image_key) : null,
    ...(status === "complete" && s.video_key ? { video_url: mediaUrl(s.video_key) } : {}),
    ...(status === "error" ? { error: s.error ?? RUNNER_ERRORS.runFailed } : {}),
  };
}

const runStatus = operation({
  method: "GET",
  path: "/script-runner/<job_id>",
  summary: "A Script Runner run and its scenes",
  output: runShape,
  async handle(ctx) {
    const id = ctx.params.job_id ?? "";
    if (!JOB_ID.test(id)) throw notFound();
    const run = await runs.find(ctx.db, ctx.partner.id, id);
    if (!run) throw notFound();
    const scenes = await scenesOf(ctx.db, id);
    return {
      job_id: run.job_id,
      partner_job_id: run.partner_job_id,
      name: run.name,
      status: run.state as z.infer<typeof runShape>["status"],
      scene_count: Number(run.scene_count),
      scenes_complete: scenes.filter((s) => s.status === "complete").length,
      scenes: scenes.map((s) => sceneView(s, run.finished_at !== null, ctx.mediaUrl)),
      credits_charged: Number(run.credits_used),
      credits_refunded: Number(run.credits_refunded),
      model: run.model,
      image_model: run.image_model,
      cost_per_scene: Number(run.cost_per_scene),
      error: run.error,
      created_at: formatTimestamp(run.created_at)!,
      updated_at: formatTimestamp(run.updated_at)!,
    };
  },
});

const listRuns = operation({
  method: "GET",
  path: "/script-runner",
  summary: "This account's Script Runner runs, newest first",
  input: z.object({ limit: limitParam(PAGE_BOUNDS.scriptRunner), offset: offsetParam }),
  output: pageShape(
    "runs",
    z.object({
      job_id: z.string(),
      partner_job_id: z.string().nullable(),
      name: z.string(),
      model_used: z.string(),
      image_model_used: z.string(),
      status: z.string(),
      scene_count: z.number().int(),
      credits_charged: z.number().int(),
      credits_refunded: z.number().int(),
      created_at: z.string(),
      updated_at: z.string(),
    }),
  ),
  async handle(ctx) {
    const page = await runs.page(ctx.db, ctx.partner.id, ctx.input);
    return pageBody("runs", page, ctx.input, (r) => ({
      job_id: r.job_id,
      partner_job_id: r.partner_job_id,
      name: r.name,
      model_used: r.model,
      image_model_used: r.image_model,
      status: r.state,
      scene_count: Number(r.scene_count),
      credits_charged: Number(r.credits_used),
      credits_refunded: Number(r.credits_refunded),
      created_at: formatTimestamp(r.created_at)!,
      updated_at: formatTimestamp(r.updated_at)!,
    }));
  },
});

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
