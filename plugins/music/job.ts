// The music job: one upstream wait for two variations (ctx.awaitUpstream, contracts/upstream.ts), stored under
// permanent media links; a provider's failure ends it `error` with its `error_code` (index.ts).
import { randomBytes } from "node:crypto";
import {
  isTransient,
  JobFailure,
  type JobKindDeclaration,
  type JobRunContext,
  type MusicControls,
  type MusicErrorCode,
  type MusicModel,
  MusicProviderError,
  type MusicTrack,
  QUEUED_PROCESSING_COMPLETE,
  UpstreamTimeoutError,
} from "mediagate/plugin";
import { FAILURE_TEXTS } from "./errors.ts";
import type { GenerateRequest } from "./input.ts";
import { PROVIDER_TIMEOUT_MS } from "./limits.ts";
import { MUSIC_TABLE, type StoredTrack, saveTracks } from "./records.ts";

/** What the job reads back: the request as validated, and where an extension's source audio is. */
export type StoredInput =
  | { operation: "generate"; request: GenerateRequest }
  | {
      operation: "extend" | "upload_extend";
      controls: MusicControls & { model: MusicModel; instrumental: boolean };
      source: {
        key: string;
        seconds: number;
        name: string;
        arrangement: Record<string, unknown> | null;
        title: string | null;
      };
    };

function failureCode(err: unknown): MusicErrorCode {
  if (err instanceof MusicProviderError) return err.code;
  if (err instanceof UpstreamTimeoutError) return "timeout";
  return "provider_down";
}

async function storeTracks(ctx: JobRunContext, tracks: MusicTrack[]): Promise<StoredTrack[]> {
  const stored: StoredTrack[] = [];
  for (const [i, t] of tracks.entries()) {
    // Unguessable names: media links are capability URLs (docs/architecture.md "Media links"); a rerun writes new ones.
    const name = `${ctx.jobId}-${i}-${randomBytes(16).toString("hex")}`;
    const audioKey = `tracks/${name}.mp3`;
    const imageKey = `covers/${name}.${t.coverMimeType === "image/png" ? "png" : "jpg"}`;
    await ctx.blobs.put(audioKey, t.audio, { contentType: "audio/mpeg" });
    await ctx.blobs.put(imageKey, t.cover, { contentType: t.coverMimeType });
    stored.push({
      audio_key: audioKey,
      image_key: imageKey,
      title: t.title,
      duration: Math.round(t.duration * 100) / 100,
      arrangement: t.arrangement,
    });
  }
  return stored;
}

export const musicJob: JobKindDeclaration<StoredInput> = {
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
      onProgress: async (fraction: number) =>
        ctx.progress(Math.floor(5 + Math.max(0, Math.min(1, fraction)) * 85), "Composing"),
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
      ctx.log.warn(
        `music ${ctx.jobId}: provider failed (${code}): ${err instanceof Error ? err.message : String(err)}`,
      );
      await ctx.db.updateTable(MUSIC_TABLE).set({ error_code: code }).where("job_id", "=", ctx.jobId).execute();
      throw new JobFailure(FAILURE_TEXTS[code]);
    }

    await ctx.progress(92, "Saving");
    const stored = await storeTracks(ctx, tracks);
    await saveTracks(ctx.db, ctx.jobId, stored);
    return { state: "complete", output: { tracks: stored.length } };
  },
};
