// The media the stand-ins serve as a service's outputs: real files made by ffmpeg, and files that lie about
// what they are (for the checks a gateway makes on what it takes in).

import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

export interface StandInMedia {
  bytes: Uint8Array;
  type: string;
  ext: string;
}

export type MediaKind = "png" | "mp4" | "mp3";

const TYPES: Record<MediaKind, string> = { png: "image/png", mp4: "video/mp4", mp3: "audio/mpeg" };

const run = promisify(execFile);
const made = new Map<string, Promise<StandInMedia>>();

/**
 * A real file made by ffmpeg from `args` (its inputs and codecs; the output file is added last), once per
 * process for each kind and args (a test pattern, a tone).
 */
export function ffmpegMedia(kind: MediaKind, args: string[]): Promise<StandInMedia> {
  const cacheKey = `${kind} ${args.join(" ")}`;
  let media = made.get(cacheKey);
  if (!media) {
    media = (async () => {
      const dir = await mkdtemp(join(tmpdir(), "standin-media-"));
      const file = join(dir, `out.${kind}`);
      try {
        // No key of any kind reaches the child: its environment is only PATH.
        await run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", ...args, file], {
          env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
        });
        return { bytes: new Uint8Array(await readFile(file)), type: TYPES[kind], ext: kind };
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    })();
    media.catch(() => made.delete(cacheKey));
    made.set(cacheKey, media);
  }
  return media;
}

/** The outputs that lie: an HTML page named .png, and a .png of zero bytes. */
export type LyingOutput = "html-as-png" | "empty-png";

export const LYING_MEDIA: Record<LyingOutput, StandInMedia> = {
  "html-as-png": {
    bytes: new TextEncoder().encode("<!doctype html><html><body><h1>Not a picture</h1></body></html>\n"),
    type: "image/png",
    ext: "png",
  },
  "empty-png": { bytes: new Uint8Array(0), type: "image/png", ext: "png" },
};

export function isLying(output: string): output is LyingOutput {
  return Object.hasOwn(LYING_MEDIA, output);
}
