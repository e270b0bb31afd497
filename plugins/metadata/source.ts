// Where the bytes come from: base64 in the request, a service media URL read back from storage, or a public
// URL fetched through the outbound guard. Split in two like every validation here: `locate` decides what the
// request points at and refuses bad URLs before anything is counted; `load` reads the bytes.

import { setImmediate as nextTurn } from "node:timers/promises";
import {
  ApiError,
  decodedSize,
  fetchSource,
  megabytes,
  type OutboundGuard,
  type ServiceMedia,
  type ServiceMediaReader,
  storedSource,
} from "mediagate/plugin";
import { METADATA_ERRORS } from "./errors.ts";
import type { RemovalSource } from "./input.ts";

export interface KindTexts {
  maxBytes: number;
  https: string;
  invalid(url: string): string;
  fetch: string;
  notFound: string;
  tooLarge: string;
}

// The spec's "max 20 MB" and "max 100 MB", in its decimal megabytes. Both caps hold while the bytes stream in
// (the outbound guard and storedSource stop at the cap with the 413), before any work on them.
export const IMAGE_LIMITS: KindTexts = {
  maxBytes: megabytes(20),
  https: METADATA_ERRORS.imageUrlHttps,
  invalid: METADATA_ERRORS.invalidImageUrl,
  fetch: METADATA_ERRORS.imageFetch,
  notFound: METADATA_ERRORS.imageNotFound,
  tooLarge: METADATA_ERRORS.imageTooLarge,
};

export const VIDEO_LIMITS: KindTexts = {
  maxBytes: megabytes(100),
  https: METADATA_ERRORS.videoUrlHttps,
  invalid: METADATA_ERRORS.invalidVideoUrl,
  fetch: METADATA_ERRORS.videoFetch,
  notFound: METADATA_ERRORS.videoNotFound,
  tooLarge: METADATA_ERRORS.videoTooLarge,
};

const NOT_BASE64 = /[^A-Za-z0-9+/]/;
/** Characters of base64 text checked between two turns of the event loop (a few milliseconds' work). */
const BASE64_SLICE = 1 << 20;

/** Whether `text` is plain base64 (padding optional, no white space), checked a slice at a time. */
export async function isBase64(text: string): Promise<boolean> {
  const end = text.endsWith("==") ? text.length - 2 : text.endsWith("=") ? text.length - 1 : text.length;
  for (let at = 0; at < end; at += BASE64_SLICE) {
    if (NOT_BASE64.test(text.slice(at, Math.min(end, at + BASE64_SLICE)))) return false;
    if (at + BASE64_SLICE < end) await nextTurn();
  }
  return true;
}

export type Located =
  | { kind: "bytes"; bytes: Uint8Array }
  | { kind: "stored"; media: Exclude<ServiceMedia, { kind: "external" }> }
  | { kind: "remote"; url: URL };

/** 400 and 413 (base64) before anything is counted; a service URL is looked up, not fetched. */
export async function locate(
  source: RemovalSource,
  limits: KindTexts,
  deps: { guard: OutboundGuard; serviceMedia: ServiceMediaReader },
): Promise<Located> {
  if ("base64" in source) {
    if (!(await isBase64(source.base64))) throw new ApiError(400, METADATA_ERRORS.invalidImageBase64);
    if (decodedSize(source.base64) > limits.maxBytes) throw new ApiError(413, METADATA_ERRORS.imageBase64TooLarge);
    return { kind: "bytes", bytes: new Uint8Array(Buffer.from(source.base64, "base64")) };
  }
  const media = await deps.serviceMedia.read(source.url);
  if (media.kind !== "external") return { kind: "stored", media };
  const checked = deps.guard.checkUrl(source.url);
  if (checked.ok) return { kind: "remote", url: checked.url };
  // Plain http and private hosts get the spec's sentence; anything else names the URL.
  if (checked.kind === "not_public" || /^http:/i.test(source.url)) throw new ApiError(400, limits.https);
  throw new ApiError(400, limits.invalid(source.url.slice(0, 200)));
}

/** The bytes, or the spec's 404 / 400 / 413 for this kind. */
export async function load(
  located: Located,
  limits: KindTexts,
  deps: { guard: OutboundGuard; timeoutMs: number; signal?: AbortSignal },
): Promise<Uint8Array> {
  if (located.kind === "bytes") return located.bytes;
  // DNS that answers with a private address: the URL is not public after all (the https sentence). HTTP
  // errors, redirects, refused connections and the 30 s deadline all read the same to a partner.
  const texts = {
    invalidUrl: limits.https,
    download: limits.fetch,
    tooLarge: limits.tooLarge,
    notFound: limits.notFound,
  };
  if (located.kind === "stored") return storedSource(located.media, { maxBytes: limits.maxBytes, texts });
  return fetchSource(located.url, { maxBytes: limits.maxBytes, timeoutMs: deps.timeoutMs, texts }, deps);
}
