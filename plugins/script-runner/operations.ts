// The Script Runner's endpoints (spec part 3, "Script Runner"): submit a script, read a run, list runs.

import {
  ApiError,
  checkPicture,
  decodeImageBase64,
  formatTimestamp,
  IMAGE_EXT,
  imageKind,
  isJobId,
  isOutboundError,
  mediaToken,
  notFound,
  type OutboundGuard,
  operation,
  PRIVATE_KEY_PREFIX,
  pageBody,
  pageShape,
  type VideoFrame,
} from "mediagate/plugin";
import { z } from "zod";
import { PARSE_ERRORS, RUNNER_ERRORS } from "./errors.ts";
import { ListInput, RunInput } from "./input.ts";
import { LIMITS } from "./limits.ts";
import { parseScript } from "./parser.ts";
import {
  costPerScene,
  IMAGE_MODEL_IDS,
  IMAGE_MODELS,
  MODEL_IDS,
  type RunnerImageModel,
  type RunnerModel,
  refundParts,
  runPrice,
  VIDEO_MODELS,
} from "./prices.ts";
import { RUNS, type RunRow, runs, SCENES, type SceneRow, scenesOf } from "./records.ts";

const IMAGE_FETCH_TIMEOUT_MS = 30_000;

/** The image at a character URL (http or https, never a private address), before any charge. */
async function fetchCharacter(guard: OutboundGuard, url: string, signal: AbortSignal): Promise<VideoFrame> {
  const checked = guard.checkUrl(url, { allowHttp: true });
  if (!checked.ok)
    throw new ApiError(
      400,
      RUNNER_ERRORS.invalidCharacterUrl(
        checked.kind === "not_public" ? "private, loopback and link-local addresses are not allowed" : checked.reason,
      ),
    );
  let body: Uint8Array;
  try {
    body = (
      await guard.fetch(checked.url, {
        allowHttp: true,
        maxBytes: LIMITS.characterImageBytes,
        timeoutMs: IMAGE_FETCH_TIMEOUT_MS,
        signal,
      })
    ).body;
  } catch (err) {
    if (signal.aborted || !isOutboundError(err)) throw err;
    const reason =
      err.kind === "not_public"
        ? "private, loopback and link-local addresses are not allowed"
        : err.kind === "too_large"
          ? "larger than 20 MB"
          : err.kind === "http_status"
            ? `the server answered ${err.status}`
            : "could not be downloaded";
    throw new ApiError(400, RUNNER_ERRORS.invalidCharacterUrl(reason));
  }
  const mimeType = imageKind(body);
  if (!mimeType) throw new ApiError(400, RUNNER_ERRORS.invalidCharacterUrl("not a PNG, JPEG or WEBP image"));
  const budget = checkPicture(body); // lib/media/budgets.ts: by its header, before anything decodes it
  if (!budget.ok) throw new ApiError(400, RUNNER_ERRORS.invalidCharacterUrl(budget.reason));
  return { bytes: body, mimeType };
}

const sceneShape = z.object({
  name: z.string(),
  status: z.enum(["processing", "complete", "error"]),
  setting: z.string(),
  dialogue: z.string(),
  start_image_url: z.string().nullable(),
  video_url: z.string().optional(),
  error: z.string().optional(),
});

// Field groups the run answers share, in the spec's order.
const jobIds = { job_id: z.string(), partner_job_id: z.string().nullable() };
const runCredits = { credits_charged: z.number().int(), credits_refunded: z.number().int() };
const sceneCost = { model: z.string(), image_model: z.string(), cost_per_scene: z.number().int() };
const stamps = { created_at: z.string(), updated_at: z.string() };

const runShape = z.object({
  ...jobIds,
  name: z.string(),
  status: z.enum(["processing", "complete", "partial", "error"]),
  scene_count: z.number().int(),
  scenes_complete: z.number().int(),
  scenes: z.array(sceneShape),
  ...runCredits,
  ...sceneCost,
  error: z.string().nullable(),
  ...stamps,
});

export const submitRun = operation({
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
    ...jobIds,
    status: z.literal("processing"),
    scene_count: z.number().int(),
    credits_used: z.number().int(),
    credits_remaining: z.number().int(),
    ...sceneCost,
  }),
  async handle(ctx) {
    const req = ctx.input;
    if (typeof req.model !== "string" || !Object.hasOwn(VIDEO_MODELS, req.model))
      throw new ApiError(400, RUNNER_ERRORS.invalidModel, { allowed_models: MODEL_IDS });
    if (typeof req.imageModel !== "string" || !Object.hasOwn(IMAGE_MODELS, req.imageModel))
      throw new ApiError(400, RUNNER_ERRORS.invalidImageModel, { allowed_image_models: IMAGE_MODEL_IDS });
    const model = req.model as RunnerModel;
    const imageModel = req.imageModel as RunnerImageModel;
    const parsed = parseScript(req.prompt);
    if (!parsed.ok)
      throw new ApiError(
        400,
        parsed.reason === "bad_dialogue" ? RUNNER_ERRORS.badDialogue(parsed.detail ?? "") : PARSE_ERRORS[parsed.reason],
      );
    const { scenes, character: description } = parsed.script;

    // One character source: the URL wins, then the upload, then a CHARACTER block (its description ignored otherwise).
    let image: VideoFrame | null = null;
    let source: RunRow["character_source"];
    if (req.imageUrl) {
      image = await fetchCharacter(ctx.capability("outbound"), req.imageUrl, ctx.request.signal);
      source = "url";
    } else if (req.imageBase64) {
      const decoded = decodeImageBase64(req.imageBase64, LIMITS.characterImageBytes);
      if (!decoded.ok)
        throw decoded.reason === "too_large"
          ? new ApiError(413, RUNNER_ERRORS.characterTooLarge)
          : new ApiError(400, RUNNER_ERRORS.characterBase64);
      if (!checkPicture(decoded.image.bytes).ok) throw new ApiError(400, RUNNER_ERRORS.characterBase64); // over the pixel budget
      image = decoded.image;
      source = "upload";
    } else if (description) source = "description";
    else throw new ApiError(400, RUNNER_ERRORS.noCharacter);

    const drawCharacter = source === "description";
    const credits = ctx.priceFor({
      ...runPrice(model, imageModel, scenes.length, drawCharacter),
      customRateMissing: RUNNER_ERRORS.customNoRate,
    });
    const perScene = costPerScene(model, imageModel);
    const parts = refundParts(credits, [
      ...scenes.map(() => perScene),
      ...(drawCharacter ? [IMAGE_MODELS[imageModel].frame] : []),
    ]);

    const key = image
      ? `${PRIVATE_KEY_PREFIX}characters/${mediaToken()}.${IMAGE_EXT[image.mimeType as keyof typeof IMAGE_EXT] ?? "img"}`
      : null;
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
        insertRecords: async (trx, [jobId]) => {
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
            await trx
              .insertInto(SCENES)
              .values({ job_id: jobId!, idx, name: s.name, setting: s.setting, dialogue: s.dialogue })
              .execute();
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

export const runStatus = operation({
  method: "GET",
  path: "/script-runner/<job_id>",
  summary: "A Script Runner run and its scenes",
  output: runShape,
  async handle(ctx) {
    const id = ctx.params.job_id ?? "";
    if (!isJobId(id)) throw notFound();
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

export const listRuns = operation({
  method: "GET",
  path: "/script-runner",
  summary: "This account's Script Runner runs, newest first",
  input: ListInput,
  output: pageShape(
    "runs",
    z.object({
      ...jobIds,
      name: z.string(),
      model_used: z.string(),
      image_model_used: z.string(),
      status: z.string(),
      scene_count: z.number().int(),
      ...runCredits,
      ...stamps,
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
