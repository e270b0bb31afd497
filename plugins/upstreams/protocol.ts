// What one upstream protocol (fal's queue API, Replicate's predictions API; OpenAI and ElevenLabs later) gives
// the gateway: submit a JSON input to a model, look at the work, cancel it, verify the service's webhook, and
// say where the media of a result is. A client knows its service's wire format and nothing of mediagate's
// areas: the gateway (routes.ts) turns a capability's request into `input` (a route's template) and the
// result's URLs into the spec's files (intake.ts).
import type { OutboundGuard } from "mediagate/plugin";

/** The names a providers file may give as `protocol`. `sandbox` has no client: it routes to the sandbox. */
export type ProtocolName = "fal" | "replicate";

export interface ProtocolClientOptions {
  /** The service's base URL (the providers file's `base_url`, else the service's public one). */
  baseUrl: string;
  /** The key, read from the variable the providers file names (`key_env`). Never logged, never in an error. */
  key: string;
  /** Every call goes through the outbound guard; it never follows a redirect, so the key stays on its origin. */
  outbound: OutboundGuard;
  /** Replicate: the webhook signing secret (Standard Webhooks, `whsec_...`), from the variable `webhook_secret_env` names. */
  webhookSecret?: string;
  /** fal: where its webhook verification keys (JWKS) are published; tests point it at a local key set. */
  jwksUrl?: string;
}

export interface ProtocolSubmit {
  /** The route's upstream model id (`fal-ai/flux/dev`, `owner/name` or `owner/name:version`). */
  model: string;
  /** The upstream's input JSON (the route's template, placeholders filled). */
  input: Record<string, unknown>;
  /** Stable across attempts and processes for this job's step (sent where the service takes one). */
  idempotencyKey: string;
  /** Where the service may report completion (our callback route); absent when callbacks are off. */
  webhookUrl?: string;
  signal: AbortSignal;
}

/** What a submit answers: the service's id and what polling needs (stored with the job: no secret, no media). */
export interface ProtocolHandle {
  id: string;
  /** fal: status_url, response_url, cancel_url as the submit answered them; Replicate: the prediction's urls. */
  data: Record<string, string>;
}

export type ProtocolPoll =
  | { state: "pending"; progress?: number; message?: string; pollAfterMs?: number }
  /** `output`: the service's result JSON (fal: the response body; Replicate: the prediction's `output`). */
  | { state: "done"; output: unknown }
  /** `error`: an UpstreamCallError whose message is safe to keep (no key, no upstream URL). */
  | { state: "failed"; error: Error };

export interface ProtocolClient {
  readonly protocol: ProtocolName;
  /**
   * Hands the work over. Throws UpstreamCallError: `accepted: false` when the service surely did not take the
   * work (connect error, time-out before an answer, 429, 5xx, 4xx), which lets the gateway try the next route.
   */
  submit(request: ProtocolSubmit): Promise<ProtocolHandle>;
  /** One look; throws UpstreamCallError when the look itself failed (the runtime looks again with back-off). */
  poll(handle: ProtocolHandle, signal: AbortSignal): Promise<ProtocolPoll>;
  /** Best effort: asks the service to stop the work. */
  cancel(handle: ProtocolHandle): Promise<void>;
  /** The media URLs of a result in the service's usual shapes (fal: images[].url, image.url, video.url, audio.url, audio_file.url; Replicate: a URL or a list). */
  outputUrls(output: unknown): string[];
  /**
   * Checks a webhook request the service sent (fal: ED25519 over its JWKS; Replicate: Standard Webhooks HMAC)
   * and answers the id of the work it reports, or null when it is forged, stale or malformed.
   */
  verifyWebhook(request: { headers: Headers; body: Uint8Array }): Promise<{ id: string } | null>;
}

/** A failed call to an upstream, with what the gateway decides on. Its message never holds the key or a URL. */
export class UpstreamCallError extends Error {
  /** The service's HTTP status, when it answered (transient.ts reads `upstreamStatus`). */
  readonly upstreamStatus?: number;
  /** Retry-After in ms, when the service sent one. */
  readonly retryAfterMs?: number;
  /** False when the service surely did not take the work: the next route may be tried. */
  readonly accepted: boolean;
  constructor(
    message: string,
    options: { status?: number; retryAfterMs?: number; accepted: boolean; cause?: unknown },
  ) {
    super(message, { cause: options.cause });
    this.name = "UpstreamCallError";
    this.upstreamStatus = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.accepted = options.accepted;
  }
}

export type ProtocolClientFactory = (options: ProtocolClientOptions) => ProtocolClient;
