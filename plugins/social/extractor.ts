// Which `social.extract` a deployment runs, chosen once at boot by SOCIAL_EXTRACTOR:
//   sandbox (default)  the sandbox (sandbox.ts): real files, made up from the link, no network
//   yt-dlp             yt-dlp on PATH (or at SOCIAL_YTDLP_PATH); a missing binary stops the boot by name
//   auto               yt-dlp when it is installed, the sandbox otherwise
// Register this plugin (instead of sandbox.ts's) where a deployment may use the real extractor. The
// variables are read here because the kernel's Config holds only the kernel's settings.
import process from "node:process";
import { type CapabilityHost, definePlugin, findOnPath, type MediaEngine, type SocialExtractor } from "mediagate/plugin";
import { sandboxExtractor } from "./sandbox.ts";
import { ytdlpExtractor } from "./ytdlp.ts";

export type ExtractorChoice = { kind: "sandbox" } | { kind: "yt-dlp"; binary: string };

export function chooseExtractor(env: Record<string, string | undefined>): ExtractorChoice {
  const wanted = (env.SOCIAL_EXTRACTOR || "sandbox").toLowerCase();
  if (wanted !== "sandbox" && wanted !== "yt-dlp" && wanted !== "auto") throw new Error(`SOCIAL_EXTRACTOR must be one of sandbox, yt-dlp, auto (got "${env.SOCIAL_EXTRACTOR}")`);
  if (wanted === "sandbox") return { kind: "sandbox" };
  const binary = env.SOCIAL_YTDLP_PATH || findOnPath("yt-dlp", env.PATH ?? "");
  if (binary) return { kind: "yt-dlp", binary };
  if (wanted === "auto") return { kind: "sandbox" };
  throw new Error("SOCIAL_EXTRACTOR=yt-dlp but yt-dlp is not on PATH (install it or set SOCIAL_YTDLP_PATH)");
}

export function buildExtractor(host: CapabilityHost, env: Record<string, string | undefined> = process.env): SocialExtractor {
  const media = () => host.capability("media");
  const choice = chooseExtractor(env);
  return choice.kind === "yt-dlp" ? ytdlpExtractor({ binary: choice.binary, media }) : sandboxExtractor({ latencyMs: host.config.sandboxLatencyMs, media });
}

export default definePlugin({
  name: "social-extractor",
  requires: ["media"],
  provides: { "social.extract": (host) => buildExtractor(host) },
});
