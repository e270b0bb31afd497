// Reading a partner's source file by URL, and the one mapping from the guard's failures to the spec's API
// errors. Each call site brings its own texts (the spec words them per endpoint and per kind of file); which
// failure gets which status is decided here, once:
//   invalid_url, not_public (also a host that resolves to a private address)  400 `invalidUrl`
//   too_large                                                                  413 `tooLarge`
//   http_status, redirect, timeout, network                                    400 `download`
//   aborted (the request's own signal), and anything not an OutboundError      passed through
// A text left out passes its failures through too (a callback URL check maps only the refused URL).
import { ApiError } from "../api-error.ts";
import type { ServiceMedia, ServiceMediaReader } from "../service-media.ts";
import { isOutboundError } from "./errors.ts";
import type { OutboundGuard } from "./fetch.ts";

export interface OutboundTexts {
  /** 400: a URL the guard refuses (syntax, scheme, or a host that is or resolves to a non-public address). */
  invalidUrl: string;
  /** 413: the file is over the cap. */
  tooLarge?: string;
  /**
   * 400: the source did not give the file (an HTTP error or redirect, a time-out, a DNS or connection
   * failure). A function gets the status a gateway would report: the one answered for a status or redirect,
   * 504 for a time-out, 502 for the rest.
   */
  download?: string | ((gatewayStatus: number) => string);
}

/** The spec's ApiError for an outbound failure, or `err` itself when it is not the partner's to hear. */
export function outboundToApiError(err: unknown, texts: OutboundTexts): unknown {
  if (!isOutboundError(err)) return err;
  switch (err.kind) {
    case "aborted":
      return err;
    case "invalid_url":
    case "not_public":
      return new ApiError(400, texts.invalidUrl);
    case "too_large":
      return texts.tooLarge === undefined ? err : new ApiError(413, texts.tooLarge);
  }
  const { download } = texts;
  if (download === undefined) return err;
  if (typeof download === "string") return new ApiError(400, download);
  const gateway =
    err.kind === "http_status" || err.kind === "redirect" ? (err.status ?? 502) : err.kind === "timeout" ? 504 : 502;
  return new ApiError(400, download(gateway));
}

export interface FetchSourceRules {
  maxBytes: number;
  timeoutMs: number;
  texts: OutboundTexts & { tooLarge: string };
}

export interface FetchSourceDeps {
  guard: OutboundGuard;
  /** The request's signal: when it fires, the download stops and its error passes through. */
  signal?: AbortSignal;
}

/** The body of `url` through the outbound guard, capped; every failure is the spec's 400 or 413. */
export async function fetchSource(
  url: string | URL,
  rules: FetchSourceRules,
  deps: FetchSourceDeps,
): Promise<Uint8Array> {
  try {
    const res = await deps.guard.fetch(url, {
      maxBytes: rules.maxBytes,
      timeoutMs: rules.timeoutMs,
      signal: deps.signal,
    });
    return res.body;
  } catch (err) {
    throw outboundToApiError(err, rules.texts);
  }
}

export interface ReadSourceRules {
  maxBytes: number;
  timeoutMs: number;
  texts: {
    invalidUrl: string;
    download: string;
    tooLarge: string;
    /** 404 for one of our media URLs with no file behind it; without it, the 400 of a dead link (`download`). */
    notFound?: string;
  };
}

export interface ReadSourceDeps extends FetchSourceDeps {
  serviceMedia: ServiceMediaReader;
}

/** The bytes of one of our own media URLs, read from storage, under the same cap and texts as a download. */
export function storedSource(
  media: Exclude<ServiceMedia, { kind: "external" }>,
  rules: Pick<ReadSourceRules, "maxBytes" | "texts">,
): Uint8Array {
  const { texts } = rules;
  if (media.kind === "missing")
    throw texts.notFound === undefined ? new ApiError(400, texts.download) : new ApiError(404, texts.notFound);
  if (media.bytes.byteLength > rules.maxBytes) throw new ApiError(413, texts.tooLarge);
  return media.bytes;
}

/**
 * A source by URL, before any charge: a media URL of this service is read from storage (spec: "a service
 * image URL is read from storage"), anything else is fetched through the outbound guard.
 */
export async function readSource(url: string, rules: ReadSourceRules, deps: ReadSourceDeps): Promise<Uint8Array> {
  const own = await deps.serviceMedia.read(url);
  if (own.kind !== "external") return storedSource(own, rules);
  if (!deps.guard.checkUrl(url).ok) throw new ApiError(400, rules.texts.invalidUrl);
  return fetchSource(url, rules, deps);
}
