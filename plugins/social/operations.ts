// The social downloader (spec part 1, "Social download record", the "Social download" states, "Social
// downloader" endpoints, the social rows of the error and rate-limit tables, "Daily quotas", conventions 8
// and 9). POST /social-download checks the link against the host rules (hosts.ts), counts the quota and
// the in-flight cap inside the submit's transaction (quota.ts), and queues a free job (job.ts) that turns
// the post into files through `social.extract` (the sandbox by default, yt-dlp when configured). Files
// are served only through the authenticated file path, to the owning key, for 7 days.
//
// Choices where the spec is silent, written down here:
// - A download is a kernel job charged 0 credits: no ledger row in any state, never in the account's
//   in-flight cap of 10 (the spec's list does not name it); its own cap is 2.
// - The 429 for the in-flight cap carries `quota` too, like the daily one; both send Retry-After.
// - A link is refused before the quota is counted, so a bad link never costs a slot; the pause switch is
//   checked first of all (the service-wide switch `social_downloads`, core/pauses.ts: operators flip it with
//   `PUT /api/v1/admin/pauses/social_downloads`).
// - The 7 days run from the submit (`expires_at` = `created_at` + 7 days).
// - The file path answers 404 for a file that does not exist (also while pending or after a failure), and
//   410 once the 7 days have passed or the file is gone from storage. `?download=1` (or `true`) adds
//   `Content-Disposition: attachment; filename="<download_name>"`; otherwise the file is `inline`.
// - GraphQL derives a field for every operation; the file path answers there with a 406 pointing at REST.
import { ApiError, contentDisposition, fileResponse, operation, type PluginDb, pageBody } from "mediagate/plugin";
import { SOCIAL_ERRORS } from "./errors.ts";
import { FileInput, ListInput, SocialDownloadInput } from "./input.ts";
import type { DownloadInput } from "./job.ts";
import { QUOTA, type QuotaView, quotaState, quotaView } from "./quota.ts";
import {
  type DownloadRow,
  insertDownload,
  isExpired,
  ListShape,
  listEntryView,
  outputOf,
  RETENTION_DAYS,
  RETENTION_MS,
  RecordShape,
  recordView,
  SubmitShape,
  socialDownloads,
} from "./records.ts";

/** The service-wide pause switch of new downloads (core/pauses.ts). */
export const PAUSE = "social_downloads";

const DOWNLOAD_ID = /^svc-[0-9a-f]{8}$/;

export const submit = operation({
  method: "POST",
  path: "/social-download",
  status: 202,
  summary: "Download a public Facebook, Instagram or TikTok post as an H.264/AAC MP4 plus its cover (free)",
  input: SocialDownloadInput,
  output: SubmitShape,
  async handle(ctx) {
    if (await ctx.isPaused(PAUSE)) throw new ApiError(503, SOCIAL_ERRORS.paused);
    const { url, link, partnerJobId } = ctx.input;
    const now = ctx.clock.now();
    const createdAt = new Date(now);
    const expiresAt = new Date(now + RETENTION_MS);
    let quota: QuotaView | undefined;
    const job = await ctx.submitJob({
      kind: "download",
      state: "pending",
      credits: 0,
      partnerJobId,
      description: `Social download: ${link.platform}`,
      input: {
        url: link.normalizedUrl,
        platform: link.platform,
        expires_at: expiresAt.toISOString(),
      } satisfies DownloadInput,
      async insertRecords(trx, [downloadId]) {
        // The partner row is locked by now (core/ledger.ts): this count sees every earlier submit.
        const state = await quotaState(trx, ctx.partner.id, now, downloadId);
        if (state.used >= QUOTA.limit) {
          const view = quotaView(state, now);
          throw new ApiError(
            429,
            SOCIAL_ERRORS.dailyLimit,
            { quota: view },
            { "Retry-After": String(Math.max(10, view.resets_in_seconds)) },
          );
        }
        if (state.running >= QUOTA.inflight)
          throw new ApiError(429, SOCIAL_ERRORS.inflight, { quota: quotaView(state, now) }, { "Retry-After": "10" });
        await insertDownload(trx, {
          download_id: downloadId!,
          partner_id: ctx.partner.id,
          platform: link.platform,
          url,
          normalized_url: link.normalizedUrl,
          created_at: createdAt,
          expires_at: expiresAt,
        });
        quota = quotaView({ used: state.used + 1, oldest: state.oldest ?? createdAt }, now);
      },
    });
    return {
      download_id: job.jobId,
      partner_job_id: partnerJobId,
      status: "pending",
      platform: link.platform,
      normalized_url: link.normalizedUrl,
      retention_days: RETENTION_DAYS,
      quota: quota!,
    };
  },
});

async function findDownload(ctx: {
  db: PluginDb;
  partner: { id: string };
  params: Record<string, string>;
}): Promise<DownloadRow> {
  const id = ctx.params.download_id ?? "";
  if (!DOWNLOAD_ID.test(id)) throw new ApiError(404, SOCIAL_ERRORS.notFound);
  const row = await socialDownloads.find(ctx.db, ctx.partner.id, id);
  if (!row) throw new ApiError(404, SOCIAL_ERRORS.notFound);
  return row;
}

export const status = operation({
  method: "GET",
  path: "/social-download/<download_id>",
  summary: "One social download: status, post details and files",
  output: RecordShape,
  async handle(ctx) {
    return recordView(await findDownload(ctx), ctx.clock.now());
  },
});

export const file = operation({
  method: "GET",
  path: "/social-download/<download_id>/file/<idx>",
  summary: "One file of a social download (Range requests; ?download=1 for an attachment). REST only.",
  input: FileInput,
  async handle(ctx) {
    const row = await findDownload(ctx);
    const idxText = ctx.params.idx ?? "";
    const stored = /^\d{1,4}$/.test(idxText) ? outputOf(row)?.files.find((f) => f.idx === Number(idxText)) : undefined;
    if (isExpired(row, ctx.clock.now())) throw new ApiError(410, SOCIAL_ERRORS.expired);
    if (!stored) throw new ApiError(404, SOCIAL_ERRORS.fileNotFound);
    const data = await ctx.blobs.get(stored.key);
    // Removed ahead of the window (storage pressure, an operator): gone, as the spec's 410 says.
    if (!data) throw new ApiError(410, SOCIAL_ERRORS.expired);
    return fileResponse(ctx.request, data, {
      "content-type": stored.content_type,
      "cache-control": "private, max-age=3600",
      "content-disposition": contentDisposition(ctx.input.download ? "attachment" : "inline", stored.download_name),
    });
  },
});

export const list = operation({
  method: "GET",
  path: "/social-downloads",
  summary: "This account's social downloads, newest first",
  input: ListInput,
  output: ListShape,
  async handle(ctx) {
    const now = ctx.clock.now();
    const page = await socialDownloads.page(ctx.db, ctx.partner.id, ctx.input);
    return pageBody("downloads", page, ctx.input, (row) => listEntryView(row, now));
  },
});
