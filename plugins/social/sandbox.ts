// The sandbox extractor (docs/architecture.md "Sandbox providers"): for any accepted link, a real post made with the
// media engine, deterministically from the link: per item a playable H.264/AAC MP4, an ad that speaks
// (sandbox-ad.ts: a seeded script read by an eSpeak NG voice, its word times recorded and returned as the
// item's `spoken`, over solid-colour shots with hard cuts and the title drawn on them) and a JPEG cover taken
// from its first frame; title, uploader, length (8-12 s) and frame size derived from the link. It takes about
// SANDBOX_LATENCY_MS and reports progress.
//
// Markers in the link's path (so they survive normalization), each reaching one failure path:
//   sandbox-fail      the generic failure          sandbox-login     the post needs a login
//   sandbox-novideo   no downloadable video        sandbox-private   private or removed
//   sandbox-toolong   longer than 600 s            sandbox-toolarge  larger than 200 MB
//   sandbox-noaudio   a video without sound        sandbox-carousel-N  N items (cut to 10 by the caps)
//   sandbox-flaky     the first attempt throws an unexpected error (the runtime's retry succeeds)
import { createHash } from "node:crypto";
import {
  definePlugin,
  type ExtractedItem,
  type ExtractedPost,
  ExtractionError,
  type ExtractRequest,
  type MediaEngine,
  type SocialExtractor,
  sandboxConfig,
  sandboxSleep,
} from "mediagate/plugin";
import type { FailureReason } from "./errors.ts";
import type { Platform } from "./hosts.ts";
import { adPlan, makeSandboxAd } from "./sandbox-ad.ts";

const FAILURE_MARKERS: ReadonlyArray<[string, FailureReason]> = [
  ["sandbox-fail", "failed"],
  ["sandbox-login", "login_required"],
  ["sandbox-novideo", "no_video"],
  ["sandbox-private", "unavailable"],
  ["sandbox-toolong", "too_long"],
  ["sandbox-toolarge", "too_large"],
];

const SIZES: Record<Platform | "vertical", { width: number; height: number }> = {
  facebook: { width: 480, height: 270 },
  instagram: { width: 320, height: 400 },
  tiktok: { width: 288, height: 512 },
  vertical: { width: 288, height: 512 },
};

const WORDS = [
  "Sunset",
  "Harbour",
  "Morning",
  "Coffee",
  "Street",
  "Market",
  "Mountain",
  "River",
  "Studio",
  "Garden",
  "Night",
  "City",
];
const VERBS = ["walk", "session", "tour", "routine", "story", "recipe", "workout", "drive"];

/** Numbers seeded by the link: the same link makes the same post. */
function seeded(seed: string) {
  let counter = 0;
  return (n: number) => createHash("sha256").update(`${seed}:${counter++}`).digest().readUInt32BE(0) % n;
}

export interface SandboxPostPlan {
  title: string;
  uploader: string;
  items: number;
  seconds: number[];
  width: number;
  height: number;
  audio: boolean;
}

/** What the sandbox will make of a link, without making it (also what tests compare with). */
export function sandboxPlan(url: string, platform: Platform): SandboxPostPlan {
  const path = new URL(url).pathname.toLowerCase();
  const pick = seeded(url);
  const carousel = /sandbox-carousel-(\d{1,2})/.exec(path);
  const items = carousel ? Math.max(1, Number(carousel[1])) : 1;
  const size = platform === "instagram" && /\/reels?\//.test(path) ? SIZES.vertical : SIZES[platform];
  return {
    title: `${WORDS[pick(WORDS.length)]} ${VERBS[pick(VERBS.length)]} #${1 + pick(999)}`,
    uploader: `${WORDS[pick(WORDS.length)]!.toLowerCase()}_${platform}_${100 + pick(900)}`,
    items,
    // Whole frames: the ad's own rounding of its seconds.
    seconds: Array.from({ length: items }, (_, i) => adPlan(itemSeed(url, i), 8 + pick(5)).seconds),
    ...size,
    audio: !path.includes("sandbox-noaudio"),
  };
}

const itemSeed = (url: string, i: number) => `${url}#${i}`;

async function makeItem(
  engine: MediaEngine,
  plan: SandboxPostPlan,
  url: string,
  i: number,
  signal: AbortSignal,
): Promise<ExtractedItem> {
  const title = plan.items > 1 ? `${plan.title} (${i + 1}/${plan.items})` : plan.title;
  const ad = await makeSandboxAd(engine, {
    seed: itemSeed(url, i),
    seconds: plan.seconds[i]!,
    width: plan.width,
    height: plan.height,
    title,
    audio: plan.audio,
    signal,
  });
  const cover = await engine.run(["-i", "video.mp4", "-frames:v", "1", "-q:v", "3", "cover.jpg"], {
    inputs: { "video.mp4": ad.video },
    outputs: ["cover.jpg"],
    signal,
  });
  return { video: ad.video, cover: { bytes: cover["cover.jpg"]!, mimeType: "image/jpeg" }, spoken: ad.spoken };
}

export function sandboxExtractor(options: { latencyMs: number; media: () => MediaEngine }): SocialExtractor {
  const flakySeen = new Set<string>();
  return {
    async extract(req: ExtractRequest): Promise<ExtractedPost> {
      const steps = 4;
      for (let i = 0; i < steps; i++) {
        await sandboxSleep(options.latencyMs / steps, req.signal);
        await req.onProgress(((i + 1) / steps) * 0.3);
      }
      const path = new URL(req.url).pathname.toLowerCase();
      for (const [marker, reason] of FAILURE_MARKERS) {
        if (path.includes(marker)) throw new ExtractionError(reason, `sandbox: ${marker} in the link`);
      }
      if (path.includes("sandbox-flaky") && !flakySeen.has(req.url)) {
        flakySeen.add(req.url);
        throw new Error("sandbox: flaky first attempt");
      }
      const plan = sandboxPlan(req.url, req.platform);
      const count = Math.min(plan.items, req.limits.maxItems);
      const items: ExtractedItem[] = [];
      for (let i = 0; i < count; i++) {
        items.push(await makeItem(options.media(), plan, req.url, i, req.signal));
        await req.onProgress(0.3 + ((i + 1) / count) * 0.7);
      }
      return { title: plan.title, uploader: plan.uploader, items };
    },
  };
}

/** Provides `social.extract` with the sandbox. extractor.ts picks yt-dlp instead when configured. */
export default definePlugin({
  name: "social-sandbox",
  config: sandboxConfig,
  requires: ["media"],
  provides: {
    // The engine is fetched on first use: capabilities are built at boot, ffmpeg.wasm is not.
    "social.extract": (host) =>
      sandboxExtractor({ latencyMs: sandboxConfig.of(host).latencyMs, media: () => host.capability("media") }),
  },
});
