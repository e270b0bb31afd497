// The run: the character picture first (stored at submit, or drawn once from its description), then every
// scene's frame and clip, several scenes at once (config.ts `scenesAtOnce`). index.ts says how money moves.
import {
  isTransient,
  JobFailure,
  type JobKindDeclaration,
  type JobRunContext,
  mediaToken,
  PRIVATE_KEY_PREFIX,
  pollToEnd,
  type VideoFrame,
} from "mediagate/plugin";
import { runnerConfig } from "./config.ts";
import { RUNNER_ERRORS } from "./errors.ts";
import { FRAME } from "./limits.ts";
import { IMAGE_MODELS, type RunnerImageModel, type RunnerModel, VIDEO_MODELS } from "./prices.ts";
import { RUNS, type RunRow, SCENES, type SceneRow, scenesOf } from "./records.ts";

export const runJob: JobKindDeclaration<Record<string, never>> = {
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
    const run = (await ctx.db
      .selectFrom(RUNS)
      .selectAll()
      .where("job_id", "=", ctx.jobId)
      .executeTakeFirstOrThrow()) as RunRow;
    const model = run.model as RunnerModel;
    const imageModel = run.image_model as RunnerImageModel;
    const character = await characterImage(ctx, run);
    if (!character) {
      await ctx.db
        .updateTable(SCENES)
        .set({ status: "error", error: RUNNER_ERRORS.characterFailed })
        .where("job_id", "=", ctx.jobId)
        .where("status", "=", "processing")
        .execute();
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

/** The image provider of a model: by its own id where one answers (an upstream gateway), else the table's route. */
const imageProvider = (ctx: JobRunContext, model: RunnerImageModel) => {
  const providers = ctx.capability("image.generate");
  return providers.route(model) ?? providers.route(IMAGE_MODELS[model].route);
};

/** The run's character picture: stored at submit, or drawn from the description once (and kept). Null if drawing fails. */
async function characterImage(ctx: JobRunContext, run: RunRow): Promise<VideoFrame | null> {
  if (run.character_key) {
    const bytes = await ctx.blobs.get(run.character_key);
    if (!bytes) throw new JobFailure(RUNNER_ERRORS.runFailed);
    return { bytes, mimeType: run.character_mime ?? "image/png" };
  }
  const provider = imageProvider(ctx, run.image_model as RunnerImageModel);
  try {
    if (!provider) throw new Error("no image provider");
    const image = await pollToEnd(provider, {
      prompt: `Character portrait: ${run.character_description ?? ""}`,
      model: run.image_model,
      ...FRAME,
      background: "auto",
      index: 0,
      references: [],
      signal: ctx.signal,
      onProgress: () => {},
    });
    const key = `${PRIVATE_KEY_PREFIX}characters/${ctx.jobId}-${mediaToken()}.png`;
    await ctx.blobs.put(key, image.bytes, { contentType: image.mimeType });
    await ctx.db
      .updateTable(RUNS)
      .set({ character_key: key, character_mime: image.mimeType })
      .where("job_id", "=", ctx.jobId)
      .execute();
    return { bytes: image.bytes, mimeType: image.mimeType };
  } catch (err) {
    if (ctx.signal.aborted || isTransient(err)) throw err;
    ctx.log.warn(
      `script runner ${ctx.jobId}: character frame failed: ${err instanceof Error ? err.message : String(err)}`,
    );
    return null;
  }
}

/** One scene: its frame, then its clip; a failure marks the scene and returns its part of the charge. */
async function renderScene(
  ctx: JobRunContext,
  run: RunRow,
  scene: SceneRow,
  character: VideoFrame,
  model: RunnerModel,
  imageModel: RunnerImageModel,
) {
  const locked = run.use_as_character_reference;
  const who = run.character_description?.trim() || "the character of the reference image";
  try {
    let frame: VideoFrame;
    const stored = scene.start_image_key ? await ctx.blobs.get(scene.start_image_key) : null;
    if (stored) frame = { bytes: stored, mimeType: "image/png" };
    else {
      const provider = imageProvider(ctx, imageModel);
      if (!provider) throw new Error("no image provider");
      const image = await pollToEnd(provider, {
        prompt: `${scene.setting}\nFeaturing ${who}.`,
        model: imageModel,
        ...FRAME,
        background: "auto",
        index: scene.idx,
        references: [
          { id: `character-${run.job_id}`, mimeType: character.mimeType, read: async () => character.bytes },
        ],
        signal: ctx.signal,
        onProgress: () => {},
      });
      frame = { bytes: image.bytes, mimeType: image.mimeType };
      const key = `frames/${run.job_id}-${scene.idx}-${mediaToken()}.png`;
      await ctx.blobs.put(key, image.bytes, { contentType: image.mimeType });
      await ctx.db
        .updateTable(SCENES)
        .set({ start_image_key: key })
        .where("job_id", "=", run.job_id)
        .where("idx", "=", scene.idx)
        .execute();
    }
    const provider = ctx.capability("video.generate").route(model);
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
    await ctx.db
      .updateTable(SCENES)
      .set({ video_key: key, status: "complete" })
      .where("job_id", "=", run.job_id)
      .where("idx", "=", scene.idx)
      .execute();
  } catch (err) {
    if (ctx.signal.aborted || isTransient(err)) throw err;
    ctx.log.warn(
      `script runner ${run.job_id} scene ${scene.idx + 1} failed: ${err instanceof Error ? err.message : String(err)}`,
    );
    await ctx.db
      .updateTable(SCENES)
      .set({ status: "error", error: RUNNER_ERRORS.sceneFailed })
      .where("job_id", "=", run.job_id)
      .where("idx", "=", scene.idx)
      .execute();
    await ctx.refundShare(scene.idx);
  }
}
