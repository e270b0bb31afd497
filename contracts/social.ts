// The `social.extract` capability: what an extractor implements. The social plugin checks the link against
// the host rules, keeps the record, enforces the quota and the caps, stores and serves the files; the
// extractor only turns a normalized post link into browser-playable MP4s and covers. The sandbox
// (plugins/social/sandbox.ts) or yt-dlp (plugins/social/ytdlp.ts) provides it, so one replaces the other without
// touching the plugin.
import { megabytes } from "../lib/sizes.ts";
import type { SpokenRecord } from "./speech.ts";

/** The three networks of the spec. */
export type SocialPlatform = "facebook" | "instagram" | "tiktok";

/** Why a download failed; the social plugin has one plain sentence for each. */
export type SocialFailureReason = "login_required" | "no_video" | "unavailable" | "too_long" | "too_large" | "failed";

/** The spec's caps ("Daily quotas": 600 s per post, 200 MB per file and per job, 10 items per carousel). */
export const SOCIAL_LIMITS = Object.freeze({
  maxSeconds: 600,
  maxFileBytes: megabytes(200),
  maxJobBytes: megabytes(200),
  maxItems: 10,
});

export type SocialLimits = typeof SOCIAL_LIMITS;

export interface ExtractRequest {
  /** `normalized_url` of the record: it passed the host rules. */
  url: string;
  platform: SocialPlatform;
  limits: SocialLimits;
  /** Aborted when the job's attempt is abandoned; stop at once. */
  signal: AbortSignal;
  /** 0-1, increasing. */
  onProgress(fraction: number): void | Promise<void>;
}

export interface ExtractedItem {
  /** An MP4 with H.264 video and, when the post has sound, AAC audio, the index in front. */
  video: Uint8Array;
  /** The item's cover picture (JPEG or PNG), or null to have the plugin take the first frame. */
  cover: { bytes: Uint8Array; mimeType: "image/jpeg" | "image/png" } | null;
  /**
   * The words spoken in `video` and their times, when the extractor made the speech itself (the sandbox's
   * ads do, lib/speech speakTimed): ad analysis then needs no recognition. Real extractors leave it out.
   */
  spoken?: SpokenRecord | null;
}

export interface ExtractedPost {
  title: string;
  uploader: string;
  /** In the post's order; at most `limits.maxItems` (a longer carousel is cut to its first items). */
  items: ExtractedItem[];
}

/**
 * An expected failure, stated as one of the plain reasons. Anything else thrown is unexpected:
 * the job is retried once, then fails with the generic sentence.
 */
export class ExtractionError extends Error {
  constructor(
    readonly reason: SocialFailureReason,
    message: string,
  ) {
    super(message);
    this.name = "ExtractionError";
  }
}

export interface SocialExtractor {
  extract(request: ExtractRequest): Promise<ExtractedPost>;
}

declare module "./index.ts" {
  interface CapabilityMap {
    "social.extract": SocialExtractor;
  }
}
