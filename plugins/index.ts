// The product areas this server runs, in order. A third party's plugin is one more entry (see examples/).
// Providers come first: `images-sandbox` provides `image.generate`; a deployment with a real upstream
// registers its adapter plugin in its place.
import account from "./account/index.ts";
import images from "./images/index.ts";
import metadata from "./metadata/index.ts";
import music from "./music/index.ts";
import musicSandbox from "./music/sandbox.ts";
import social from "./social/index.ts";
import upscale from "./upscale/index.ts";
import socialExtractor from "./social/extractor.ts";
import imagesSandbox from "./images/sandbox.ts";
import video from "./video/index.ts";
import videoSandbox from "./video/sandbox.ts";
import voiceover from "./voiceover/index.ts";
import voiceoverSandbox from "./voiceover/sandbox.ts";
import webhooks from "./webhooks/index.ts";

export const plugins = [account, webhooks, imagesSandbox, images, videoSandbox, video, upscale, voiceoverSandbox, voiceover, musicSandbox, music, metadata, socialExtractor, social];
