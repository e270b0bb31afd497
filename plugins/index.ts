// The product areas this server runs, in order (`defaultPlugins`, also exported by the package root with each
// area by name). A third party's plugin is one more entry, in mediagate.config.ts (docs/server-api.md).
// Providers come first: `images-sandbox` provides `image.generate`; a deployment with a real upstream
// registers its adapter plugin in its place, or sets PROVIDERS_FILE for `upstreams` (docs/upstreams.md).
import account from "./account/index.ts";
import analysis from "./analysis/index.ts";
import captions from "./captions/index.ts";
import images from "./images/index.ts";
import imagesSandbox from "./images/sandbox.ts";
import metadata from "./metadata/index.ts";
import music from "./music/index.ts";
import musicSandbox from "./music/sandbox.ts";
import omni from "./omni/index.ts";
import omniSandbox from "./omni/sandbox.ts";
import scriptRunner from "./script-runner/index.ts";
import socialExtractor from "./social/extractor.ts";
import social from "./social/index.ts";
import text from "./text/index.ts";
import upscale from "./upscale/index.ts";
import upstreams from "./upstreams/index.ts";
import video from "./video/index.ts";
import videoSandbox from "./video/sandbox.ts";
import voiceover from "./voiceover/index.ts";
import voiceoverSandbox from "./voiceover/sandbox.ts";
import webhooks from "./webhooks/index.ts";

export const defaultPlugins = [
  account,
  webhooks,
  imagesSandbox,
  images,
  videoSandbox,
  video,
  captions,
  text,
  omniSandbox,
  omni,
  scriptRunner,
  upscale,
  voiceoverSandbox,
  voiceover,
  musicSandbox,
  // After every sandbox it can stand in for: with PROVIDERS_FILE it overrides their capabilities.
  upstreams,
  music,
  metadata,
  socialExtractor,
  social,
  analysis,
];

/** The same list under its earlier name (tests and scripts import it). */
export const plugins = defaultPlugins;

export {
  account,
  analysis,
  captions,
  images,
  imagesSandbox,
  metadata,
  music,
  musicSandbox,
  omni,
  omniSandbox,
  scriptRunner,
  social,
  socialExtractor,
  text,
  upscale,
  upstreams,
  video,
  videoSandbox,
  voiceover,
  voiceoverSandbox,
  webhooks,
};
