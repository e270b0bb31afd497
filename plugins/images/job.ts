// The image job: one image, rendered through the model's provider chain (spec part 1, "Image generation",
// the image states table); a transient failure of one route moves to the next.
import {
  failFromProvider,
  type GeneratedImage,
  JobFailure,
  type JobKindDeclaration,
  mediaToken,
  PENDING_SUCCESS_FAILED,
  TransientProviderError,
  UpstreamTimeoutError,
} from "mediagate/plugin";
import { IMAGE_ERRORS } from "./errors.ts";
import type { ImageRequest } from "./input.ts";
import { imageRoutes, type ModelId } from "./models.ts";
import { metadataChunks, stripPngMetadata } from "./png.ts";
import { IMAGES_TABLE, type ImageOutput } from "./records.ts";

/** What each image job keeps as its input (the kernel stores it on the job row). */
export type StoredInput = {
  width: number;
  height: number;
  background: ImageRequest["background"];
  strip_metadata: boolean;
  /**
   * The uploaded references and the given URLs, in the order used. `id` names an upload by its content
   * (`refs/<sha256>.<ext>`) and seeds the sandbox; inputs stored before it had one use their key, which
   * was that same name.
   */
  references: Array<{ key: string; mime_type: string; id?: string } | { url: string }>;
};

/**
 * How long one route's upstream may take before the job moves to the next route (or fails): the spec gives
 * no time-out for images; ten minutes is far beyond any image model's render.
 */
const UPSTREAM_DEADLINE_SECONDS = 600;

export const imageJob: JobKindDeclaration<StoredInput> = {
  ...PENDING_SUCCESS_FAILED,
  failError: IMAGE_ERRORS.failed,
  retries: 2,
  timeoutSeconds: 300,
  concurrency: 4,
  async run(ctx) {
    const row = await ctx.db
      .selectFrom(IMAGES_TABLE)
      .selectAll()
      .where("job_id", "=", ctx.jobId)
      .executeTakeFirstOrThrow();
    const providers = ctx.capability("image.generate");
    const input = ctx.input;
    const routes = imageRoutes(providers, row.model as ModelId);
    // Each route is a step of its own; a later poll resumes at the route the job is waiting on.
    const resumeAt = Math.max(
      0,
      routes.findIndex((route) => `route:${route}` === ctx.upstreamStep),
    );
    let image: GeneratedImage | undefined;
    for (const route of routes.slice(resumeAt)) {
      try {
        image = await ctx.awaitUpstream(
          `route:${route}`,
          providers.route(route)!,
          () => ({
            prompt: row.prompt,
            model: row.model as ModelId,
            width: input.width,
            height: input.height,
            background: input.background,
            index: row.request_index,
            references: input.references.map((r) =>
              "url" in r
                ? { id: r.url, url: r.url }
                : { id: r.id ?? r.key, mimeType: r.mime_type, read: () => ctx.blobs.get(r.key) },
            ),
          }),
          { deadlineSeconds: UPSTREAM_DEADLINE_SECONDS, onProgress: (f) => ctx.progress(f * 90) },
        );
        break;
      } catch (err) {
        if (ctx.signal.aborted) throw err;
        if (err instanceof TransientProviderError || err instanceof UpstreamTimeoutError) {
          ctx.log.warn(
            `image ${ctx.jobId}: route ${route} failed transiently (${(err as Error).message}), trying the next`,
          );
          continue;
        }
        failFromProvider(ctx, err, IMAGE_ERRORS, `image ${ctx.jobId}: route ${route} failed`);
      }
    }
    if (!image) throw new JobFailure(IMAGE_ERRORS.failed);

    const bytes = input.strip_metadata ? stripPngMetadata(image.bytes) : image.bytes;
    // Computed from the stored bytes, not copied from the request (spec: "carries none of that metadata").
    const metadataRemoved = input.strip_metadata && metadataChunks(bytes).length === 0;
    const key = `${ctx.jobId}-${mediaToken()}.png`; // 128 random bits: a capability URL
    await ctx.blobs.put(key, bytes, { contentType: image.mimeType });
    return {
      state: "success",
      output: {
        image_key: key,
        metadata_removed: metadataRemoved,
        width: input.width,
        height: input.height,
      } satisfies ImageOutput,
    };
  },
};
