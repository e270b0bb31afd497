// Which `social.extract` a deployment runs, chosen once at boot by SOCIAL_EXTRACTOR:
//   sandbox (default)  the sandbox (sandbox.ts): real files, made up from the link, no network
//   yt-dlp             yt-dlp on PATH (or at SOCIAL_YTDLP_PATH); a missing binary stops the boot by name
//   auto               yt-dlp when it is installed, the sandbox otherwise
// Register this plugin (instead of sandbox.ts's) where a deployment may use the real extractor. Its variables
// are declared here and read by the kernel at boot, with the sandbox's latency shared with sandbox.ts.

import {
  type CapabilityHost,
  ConfigError,
  defineConfig,
  definePlugin,
  type Environment,
  envVar,
  findOnPath,
  type SocialExtractor,
  sandboxConfig,
} from "mediagate/plugin";
import { z } from "zod";
import { sandboxExtractor } from "./sandbox.ts";
import { ytdlpExtractor } from "./ytdlp.ts";

export const extractorConfig = defineConfig({
  ...sandboxConfig.variables,
  extractor: envVar(
    "SOCIAL_EXTRACTOR",
    z
      .string()
      .transform((s) => s.toLowerCase())
      .pipe(z.enum(["sandbox", "yt-dlp", "auto"], { error: "must be one of sandbox, yt-dlp, auto" }))
      .default("sandbox"),
    "which social.extract runs: sandbox (default), yt-dlp, or auto (yt-dlp when installed, else the sandbox)",
  ),
  ytdlpPath: envVar("SOCIAL_YTDLP_PATH", z.string().optional(), "the yt-dlp binary (default: yt-dlp on PATH)"),
});

type ExtractorSettings = Pick<ReturnType<typeof extractorConfig.of>, "extractor" | "ytdlpPath">;

export type ExtractorChoice = { kind: "sandbox" } | { kind: "yt-dlp"; binary: string };

/** What the settings select; yt-dlp is looked for on `pathEnv` (default: the server's PATH) unless a path is set. */
export function selectExtractor(settings: ExtractorSettings, pathEnv?: string): ExtractorChoice {
  if (settings.extractor === "sandbox") return { kind: "sandbox" };
  const binary = settings.ytdlpPath || findOnPath("yt-dlp", pathEnv);
  if (binary) return { kind: "yt-dlp", binary };
  if (settings.extractor === "auto") return { kind: "sandbox" };
  throw new ConfigError("SOCIAL_EXTRACTOR=yt-dlp but yt-dlp is not on PATH (install it or set SOCIAL_YTDLP_PATH)");
}

/** The choice an environment makes, its PATH included, read as the kernel reads it at boot. */
export function chooseExtractor(env: Environment): ExtractorChoice {
  return selectExtractor(extractorConfig.read(env), env.PATH ?? "");
}

export function buildExtractor(host: CapabilityHost): SocialExtractor {
  const settings = extractorConfig.of(host);
  const media = () => host.capability("media");
  const choice = selectExtractor(settings);
  return choice.kind === "yt-dlp"
    ? ytdlpExtractor({ binary: choice.binary, media })
    : sandboxExtractor({ latencyMs: settings.latencyMs, media });
}

export default definePlugin({
  name: "social-extractor",
  requires: ["media"],
  config: extractorConfig,
  provides: { "social.extract": (host) => buildExtractor(host) },
});
