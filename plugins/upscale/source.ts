// Reading an upscale source before any charge: a media URL of this service is read from storage (spec: "a
// service image URL is read from storage"), anything else is fetched through the outbound guard with the
// size and time caps of its kind. Every failure is the spec's 400 or 413 for that kind.
import { ApiError, isOutboundError, type OutboundGuard, type ServiceMediaReader } from "mediagate/plugin";

export interface SourceRules {
  maxBytes: number;
  timeoutMs: number;
  texts: { invalidUrl: string; download: string; tooLarge: string };
}

export interface SourceDeps {
  serviceMedia: ServiceMediaReader;
  guard: OutboundGuard;
  /** The request's signal: when it fires, the download stops and its error passes through. */
  signal?: AbortSignal;
}

export async function readSource(url: string, rules: SourceRules, deps: SourceDeps): Promise<Uint8Array> {
  const { texts } = rules;
  const own = await deps.serviceMedia.read(url);
  if (own.kind === "found") {
    if (own.bytes.byteLength > rules.maxBytes) throw new ApiError(413, texts.tooLarge);
    return own.bytes;
  }
  // One of our links with no file behind it: as unreadable as a dead external link.
  if (own.kind === "missing") throw new ApiError(400, texts.download);
  if (!deps.guard.checkUrl(url).ok) throw new ApiError(400, texts.invalidUrl);
  try {
    const res = await deps.guard.fetch(url, { maxBytes: rules.maxBytes, timeoutMs: rules.timeoutMs, signal: deps.signal });
    return res.body;
  } catch (err) {
    if (!isOutboundError(err)) throw err;
    switch (err.kind) {
      case "invalid_url":
      case "not_public":
        throw new ApiError(400, texts.invalidUrl);
      case "too_large":
        throw new ApiError(413, texts.tooLarge);
      case "aborted":
        throw err;
      default:
        // Status, redirect, time-out, DNS or connection failure: the partner's link did not give us the file.
        throw new ApiError(400, texts.download);
    }
  }
}
