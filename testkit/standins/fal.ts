// A local stand-in for fal's queue API, for tests and benchmarks (issue 39). It follows fal's public
// documentation, not our client:
// - docs.fal.ai "Queue" and the Inference API reference: `POST /{owner}/{app}[/{path}]` with the input as the
//   JSON body answers 200 {request_id, response_url, status_url, cancel_url, queue_position}, the three URLs
//   under the app's owner and name only (`/{owner}/{app}/requests/{id}`, `.../status`, `.../cancel`), never
//   under the full model id. `GET status_url` answers {status, request_id, response_url, status_url,
//   cancel_url} with IN_QUEUE (and `queue_position`), IN_PROGRESS (and `logs` when `?logs=1`) or COMPLETED;
//   202 while queued or running, 200 once complete. `GET response_url` answers the model's output, or its
//   error: 422 with a `detail` list of {loc, msg, type} (model validation), or `detail` and `error_type` (a
//   request error, also in the X-Fal-Error-Type header); 400 while the request is not done. `PUT cancel_url`
//   answers 202 {"status":"CANCELLATION_REQUESTED"}, 400 {"status":"ALREADY_COMPLETED"} or 404
//   {"status":"NOT_FOUND"}. Every queue call needs `Authorization: Key <key>` (401 with a `detail` otherwise).
// - docs.fal.ai "Webhooks": with `?fal_webhook=<url>` on the submit, the end is POSTed there as
//   {request_id, gateway_request_id, status: "OK", payload} or {..., status: "ERROR", error, payload}, with
//   X-Fal-Webhook-Request-Id, -User-Id, -Timestamp (Unix seconds) and -Signature: the hex ED25519 signature of
//   "<request id>\n<user id>\n<timestamp>\n<hex SHA-256 of the body>". The stand-in signs with a key pair of
//   its own and publishes the public key as a JWKS ({keys: [{kty: "OKP", crv: "Ed25519", x, ...}]}) at jwksUrl.
// - Result shapes of fal's media models: `images: [{url, content_type, file_name, file_size, width, height}]`,
//   `image: {...}`, `video: {url, content_type, file_name, file_size}`, `audio: {...}`, `audio_file: {...}`.
// Outputs are served by the stand-in itself, as fal serves them from its media host: a real PNG of the input's
// `image_size` (fal's names, or {width, height}; else `width`/`height`; else 256x256), an MP4 (H.264/AAC) of
// the input's duration and aspect ratio, an MP3 of its duration, made by ffmpeg once per process and shape; or
// on request a file that lies (an HTML page named .png, zero bytes).

import { createHash, generateKeyPairSync, type KeyObject, randomUUID, sign } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { readBody, sendJson as send } from "./http.ts";
import { ffmpegMedia, isLying, LYING_MEDIA, type StandInMedia } from "./media.ts";

/** What a request's result is: a fal result shape with real media, or a media file that lies. */
export type FalStandInOutput = "images" | "image" | "video" | "audio" | "audio_file" | "html-as-png" | "empty-png";

/** How requests move: one status per status look (`on-poll`, the default), only by `step`/`finish`, or by time. */
export type FalStandInPace = "on-poll" | "manual" | { latencyMs: number };

/** How a request fails: a model validation error (422, `detail` list) or a request error (`error_type`). */
export type FalStandInFailure = string | { status: number; detail: string; errorType?: string };

export interface FalStandInOptions {
  /** The key the stand-in accepts (default a fixed test key). */
  key?: string;
  pace?: FalStandInPace;
  /** The output of every request, or per model id; default by the model id (video, audio, else images). */
  output?: FalStandInOutput | ((model: string, input: Record<string, unknown>) => FalStandInOutput);
  /** Requests end with this error (all, or those this returns one for). A string is a 422 validation message. */
  fail?: FalStandInFailure | ((model: string, input: Record<string, unknown>) => FalStandInFailure | undefined);
  /** The webhook timestamps' clock in ms (default Date.now). */
  now?: () => number;
}

export interface FalStandInCall {
  method: string;
  /** Path and query, e.g. `/fal-ai/flux/requests/<id>/status`. */
  path: string;
  headers: Record<string, string>;
  /** The parsed JSON body, when there was one. */
  body: unknown;
}

export interface FalStandInRequest {
  id: string;
  /** The model id submitted to (`fal-ai/flux/dev`). */
  model: string;
  /** The owner and app (`fal-ai/flux`): the request's URLs live under it. */
  app: string;
  input: Record<string, unknown>;
  status: "IN_QUEUE" | "IN_PROGRESS" | "COMPLETED";
  webhookUrl?: string;
  cancelled: boolean;
  /** The result JSON (COMPLETED, succeeded), or the error answered at response_url. */
  result?: unknown;
  error?: { status: number; body: unknown; errorType?: string };
}

export interface FalStandInWebhook {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** The receiver's status, or the error when it could not be reached. */
  status: number | string;
}

export interface FalStandIn {
  /** The base URL to give as the provider's `base_url` (`http://127.0.0.1:<port>`). */
  url: string;
  /** Where the stand-in publishes its webhook key (a JWKS). */
  jwksUrl: string;
  key: string;
  /** Every queue API call, in order (media downloads and the JWKS are not listed). */
  requests: FalStandInCall[];
  /** The submitted requests by request_id. */
  submitted: Map<string, FalStandInRequest>;
  /** Webhook deliveries made, in order. */
  webhooks: FalStandInWebhook[];
  /** The next `count` submits are refused with this status (503, 429...), with `Retry-After` when given. */
  refuseSubmits(status: number, count?: number, retryAfter?: string): void;
  /** The next `count` looks at a status URL (or a response URL) are refused with this status, no fal error body. */
  refuseLooks(status: number, options?: { count?: number; retryAfter?: string; at?: "status" | "result" }): void;
  /** Moves a request one status on (IN_QUEUE -> IN_PROGRESS -> COMPLETED, its webhook delivered). */
  step(id: string): Promise<void>;
  /** Moves a request to COMPLETED (succeeded or failed), its webhook delivered. */
  finish(id: string): Promise<void>;
  /** Resolves when `count` webhook deliveries have been made. */
  webhooksDelivered(count: number): Promise<void>;
  /** Signs a webhook body as the stand-in does (for tests that forge or replay one). */
  signWebhook(requestId: string, body: string, options?: { timestampS?: number; privateKey?: KeyObject }): Headers;
  /** A new signing key: the JWKS publishes only the new one from now on. */
  rotateKey(): void;
  close(): Promise<void>;
}

const DEFAULT_KEY = "fal-standin-0000-0000-0000-000000000000:0123456789abcdef0123456789abcdef";
const USER_ID = "standin-user";
const UNAUTHORIZED = { detail: "Authentication is required to perform this action." };
/** fal gives a webhook receiver 15 s to answer. */
const WEBHOOK_TIMEOUT_MS = 15_000;
const STILL_RUNNING = { detail: "Request is still in progress" };

/** Seconds asked for by an input's `duration` ("5", "5s", 5), within limits; else the default. */
function secondsOf(input: Record<string, unknown>, fallback: number, max: number): number {
  const raw = input.duration ?? input.seconds;
  const n = typeof raw === "number" ? raw : typeof raw === "string" ? Number.parseFloat(raw) : Number.NaN;
  return Number.isFinite(n) && n > 0 ? Math.min(Math.ceil(n), max) : fallback;
}

/** The video's frame for an input's aspect_ratio (16:9 unless it asks for portrait or square). */
function frameOf(input: Record<string, unknown>): string {
  const aspect = String(input.aspect_ratio ?? "");
  return aspect === "9:16" ? "240x426" : aspect === "1:1" ? "320x320" : "426x240";
}

/** fal's named image sizes (`image_size` as a word). */
const IMAGE_SIZES: Record<string, [number, number]> = {
  square_hd: [1024, 1024],
  square: [512, 512],
  portrait_4_3: [768, 1024],
  portrait_16_9: [576, 1024],
  landscape_4_3: [1024, 768],
  landscape_16_9: [1024, 576],
};
const DEFAULT_PICTURE: [number, number] = [256, 256];

/** The picture size an input asks for: `image_size` ({width, height} or a name), or `width`/`height`. */
function pictureSize(input: Record<string, unknown>): [number, number] {
  const side = (v: unknown) => {
    const n = typeof v === "number" ? v : typeof v === "string" ? Number(v) : Number.NaN;
    return Number.isFinite(n) && n >= 16 && n <= 4096 ? Math.round(n) : undefined;
  };
  const asked = input.image_size;
  if (typeof asked === "string" && IMAGE_SIZES[asked]) return IMAGE_SIZES[asked]!;
  const box = typeof asked === "object" && asked !== null ? (asked as Record<string, unknown>) : input;
  const w = side(box.width);
  const h = side(box.height);
  return w && h ? [w, h] : DEFAULT_PICTURE;
}

function mediaOf(output: FalStandInOutput, input: Record<string, unknown>): Promise<StandInMedia> {
  if (isLying(output)) return Promise.resolve(LYING_MEDIA[output]);
  if (output === "video") {
    const seconds = secondsOf(input, 5, 30);
    const frame = frameOf(input);
    return ffmpegMedia("mp4", [
      ...["-f", "lavfi", "-i", `testsrc2=size=${frame}:rate=25:duration=${seconds}`],
      ...["-f", "lavfi", "-i", `sine=frequency=440:duration=${seconds}`],
      ...["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest"],
    ]);
  }
  if (output === "audio" || output === "audio_file") {
    const seconds = secondsOf(input, 10, 300);
    return ffmpegMedia("mp3", [
      ...["-f", "lavfi", "-i", `sine=frequency=440:duration=${seconds}`],
      ...["-c:a", "libmp3lame", "-b:a", "64k"],
    ]);
  }
  const [width, height] = pictureSize(input);
  return ffmpegMedia("png", [
    ...["-f", "lavfi", "-i", `testsrc2=size=${width}x${height}:rate=1`],
    ...["-frames:v", "1"],
  ]);
}

/** The default output of a model id: fal's video and audio apps say so in their ids. */
function defaultOutput(model: string): FalStandInOutput {
  if (/video/i.test(model)) return "video";
  if (/audio|music|song|speech|tts/i.test(model)) return "audio";
  return "images";
}

/** The hex ED25519 signature fal's webhooks carry, over fal's documented message. */
function signatureOf(
  privateKey: KeyObject,
  requestId: string,
  userId: string,
  timestamp: string,
  body: string,
): string {
  const digest = createHash("sha256").update(body).digest("hex");
  return sign(null, Buffer.from(`${requestId}\n${userId}\n${timestamp}\n${digest}`), privateKey).toString("hex");
}

export async function startFalStandIn(options: FalStandInOptions = {}): Promise<FalStandIn> {
  const key = options.key ?? DEFAULT_KEY;
  const pace = options.pace ?? "on-poll";
  const now = options.now ?? Date.now;
  const requests: FalStandInCall[] = [];
  const submitted = new Map<string, FalStandInRequest>();
  const webhooks: FalStandInWebhook[] = [];
  const files = new Map<string, StandInMedia>();
  const refusals: Array<{ status: number; retryAfter?: string }> = [];
  const lookRefusals = { status: [] as Array<{ status: number; retryAfter?: string }>, result: [] as typeof refusals };
  const deliveryWaiters: Array<{ count: number; resolve: () => void }> = [];
  const timers = new Set<NodeJS.Timeout>();
  const pendingWork = new Set<Promise<unknown>>();
  /** Aborts the webhook deliveries still under way when the stand-in closes. */
  const closing = new AbortController();
  let signing = generateKeyPairSync("ed25519");
  let keyNumber = 1;
  let base = "";

  const jwks = () => {
    const jwk = signing.publicKey.export({ format: "jwk" });
    return { keys: [{ kty: "OKP", crv: "Ed25519", x: jwk.x, kid: `standin-${keyNumber}`, use: "sig", alg: "EdDSA" }] };
  };

  const urlsOf = (r: FalStandInRequest) => {
    const under = `${base}/${r.app}/requests/${r.id}`;
    return { response_url: under, status_url: `${under}/status`, cancel_url: `${under}/cancel` };
  };

  const outputOf = (r: FalStandInRequest) =>
    typeof options.output === "function"
      ? options.output(r.model, r.input)
      : (options.output ?? defaultOutput(r.model));
  const failureOf = (r: FalStandInRequest) =>
    typeof options.fail === "function" ? options.fail(r.model, r.input) : options.fail;

  /** The result JSON of a request that succeeded, its media stored to be served. */
  async function resultOf(r: FalStandInRequest): Promise<unknown> {
    const output = outputOf(r);
    const media = await mediaOf(output, r.input);
    const fileName = `${isLying(output) ? "image" : output}.${media.ext}`;
    const path = `/files/${r.id}/${fileName}`;
    files.set(path, media);
    const file = {
      url: `${base}${path}`,
      content_type: media.type,
      file_name: fileName,
      file_size: media.bytes.length,
    };
    const [width, height] = pictureSize(r.input);
    const picture = { ...file, width, height };
    switch (output) {
      case "video":
        return { video: file, seed: 42 };
      case "audio":
        return { audio: file };
      case "audio_file":
        return { audio_file: file };
      case "image":
        return { image: picture, seed: 42 };
      default:
        return { images: [picture], seed: 42, has_nsfw_concepts: [false], prompt: r.input.prompt ?? "" };
    }
  }

  async function deliver(r: FalStandInRequest): Promise<void> {
    if (!r.webhookUrl) return;
    const body = JSON.stringify(
      r.error
        ? {
            request_id: r.id,
            gateway_request_id: r.id,
            status: "ERROR",
            error: `Invalid status code: ${r.error.status}`,
            payload: r.error.body,
          }
        : { request_id: r.id, gateway_request_id: r.id, status: "OK", payload: r.result },
    );
    const headers = signed(r.id, body);
    const record: FalStandInWebhook = { url: r.webhookUrl, headers: Object.fromEntries(headers), body, status: 0 };
    try {
      const signal = AbortSignal.any([closing.signal, AbortSignal.timeout(WEBHOOK_TIMEOUT_MS)]);
      const res = await fetch(r.webhookUrl, { method: "POST", headers, body, redirect: "manual", signal });
      await res.arrayBuffer().catch(() => {});
      record.status = res.status;
    } catch (err) {
      record.status = err instanceof Error ? err.message : String(err);
    }
    webhooks.push(record);
    for (const w of [...deliveryWaiters]) {
      if (webhooks.length >= w.count) {
        deliveryWaiters.splice(deliveryWaiters.indexOf(w), 1);
        w.resolve();
      }
    }
  }

  function signed(requestId: string, body: string, opts: { timestampS?: number; privateKey?: KeyObject } = {}) {
    const timestamp = String(opts.timestampS ?? Math.floor(now() / 1000));
    const signature = signatureOf(opts.privateKey ?? signing.privateKey, requestId, USER_ID, timestamp, body);
    return new Headers({
      "content-type": "application/json",
      "x-fal-webhook-request-id": requestId,
      "x-fal-webhook-user-id": USER_ID,
      "x-fal-webhook-timestamp": timestamp,
      "x-fal-webhook-signature": signature,
    });
  }

  /** Ends a request (its result or error made), then delivers its webhook. */
  async function finish(r: FalStandInRequest): Promise<void> {
    if (r.status === "COMPLETED") return;
    const failure = failureOf(r);
    if (failure !== undefined) {
      r.error =
        typeof failure === "string"
          ? { status: 422, body: { detail: [{ loc: ["body", "prompt"], msg: failure, type: "value_error" }] } }
          : {
              status: failure.status,
              body: { detail: failure.detail, ...(failure.errorType ? { error_type: failure.errorType } : {}) },
              ...(failure.errorType ? { errorType: failure.errorType } : {}),
            };
    } else {
      r.result = await resultOf(r);
    }
    r.status = "COMPLETED";
    await deliver(r);
  }

  async function step(r: FalStandInRequest): Promise<void> {
    if (r.status === "IN_QUEUE") r.status = "IN_PROGRESS";
    else await finish(r);
  }

  /** Work started by a status look or a timer, kept so `close` can wait for it. */
  const track = (p: Promise<unknown>) => {
    const tracked = p.catch(() => {}).finally(() => pendingWork.delete(tracked));
    pendingWork.add(tracked);
    return p;
  };

  const authorized = (req: IncomingMessage) => req.headers.authorization === `Key ${key}`;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://standin");
    const method = req.method ?? "GET";
    const raw = await readBody(req);
    if (method === "GET" && url.pathname === "/.well-known/jwks.json") return send(res, 200, jwks());
    if (method === "GET" && url.pathname.startsWith("/files/")) {
      const media = files.get(url.pathname);
      if (!media) return send(res, 404, { detail: "Not found" });
      res.writeHead(200, { "content-type": media.type, "content-length": String(media.bytes.length) });
      res.end(media.bytes);
      return;
    }
    let body: unknown;
    const text = raw.toString("utf8");
    if (text) {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    requests.push({
      method,
      path: url.pathname + url.search,
      headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
      body,
    });
    if (!authorized(req)) return send(res, 401, UNAUTHORIZED);

    const segments = url.pathname.split("/").filter(Boolean);
    // /{owner}/{app}/requests/{id}[/status|/cancel]
    if (segments.length >= 4 && segments[2] === "requests" && method !== "POST") {
      const app = `${segments[0]}/${segments[1]}`;
      const id = segments[3]!;
      const tail = segments.slice(4).join("/");
      const r = submitted.get(id);
      const known = r && r.app === app;
      if (method === "PUT" && tail === "cancel") {
        if (!known) return send(res, 404, { status: "NOT_FOUND" });
        if (r.status === "COMPLETED") return send(res, 400, { status: "ALREADY_COMPLETED" });
        r.cancelled = true;
        r.error = { status: 400, body: { detail: "Request was cancelled" } };
        r.status = "COMPLETED";
        return send(res, 202, { status: "CANCELLATION_REQUESTED" });
      }
      if (method !== "GET" || !known) return send(res, 404, { detail: "Request not found" });
      const refused = lookRefusals[tail === "status" ? "status" : "result"].shift();
      if (refused) {
        // A gateway's or proxy's answer, not fal's verdict on the request: plain text, no `detail`.
        res.writeHead(refused.status, {
          "content-type": "text/plain",
          ...(refused.retryAfter ? { "retry-after": refused.retryAfter } : {}),
        });
        res.end("upstream unavailable\n");
        return;
      }
      if (tail === "status") {
        const answer = statusOf(r, url.searchParams.get("logs") === "1");
        // The look that finds it running is the one that moves it on (`on-poll`): the next look sees the change.
        if (pace === "on-poll" && r.status !== "COMPLETED") await track(step(r));
        return send(res, answer.status === "COMPLETED" ? 200 : 202, answer);
      }
      if (tail === "") {
        if (r.status !== "COMPLETED") return send(res, 400, STILL_RUNNING);
        if (r.error) {
          return send(
            res,
            r.error.status,
            r.error.body,
            r.error.errorType ? { "x-fal-error-type": r.error.errorType } : {},
          );
        }
        return send(res, 200, r.result);
      }
      return send(res, 404, { detail: "Not found" });
    }
    if (method === "POST" && segments.length >= 2) {
      const refusal = refusals.shift();
      if (refusal) {
        const detail = refusal.status === 429 ? "Rate limit exceeded" : "Service temporarily unavailable";
        return send(res, refusal.status, { detail }, refusal.retryAfter ? { "retry-after": refusal.retryAfter } : {});
      }
      if (typeof body !== "object" || body === null || Array.isArray(body)) {
        return send(res, 422, {
          detail: [{ loc: ["body"], msg: "Input should be a valid dictionary", type: "dict_type" }],
        });
      }
      const r: FalStandInRequest = {
        id: randomUUID(),
        model: segments.join("/"),
        app: `${segments[0]}/${segments[1]}`,
        input: body as Record<string, unknown>,
        status: "IN_QUEUE",
        cancelled: false,
      };
      const webhook = url.searchParams.get("fal_webhook");
      if (webhook) r.webhookUrl = webhook;
      submitted.set(r.id, r);
      const queuePosition = [...submitted.values()].filter((q) => q.status === "IN_QUEUE").length - 1;
      if (typeof pace === "object") {
        const half = setTimeout(() => {
          timers.delete(half);
          if (r.status === "IN_QUEUE") r.status = "IN_PROGRESS";
        }, pace.latencyMs / 2);
        const end = setTimeout(() => {
          timers.delete(end);
          void track(finish(r));
        }, pace.latencyMs);
        timers.add(half);
        timers.add(end);
      }
      return send(res, 200, { request_id: r.id, ...urlsOf(r), queue_position: queuePosition });
    }
    return send(res, 404, { detail: "Not found" });
  }

  function statusOf(r: FalStandInRequest, logs: boolean) {
    const answer: Record<string, unknown> = { status: r.status, request_id: r.id, ...urlsOf(r) };
    if (r.status === "IN_QUEUE") {
      answer.queue_position = [...submitted.values()].filter((q) => q.status === "IN_QUEUE").indexOf(r);
    }
    if (logs && r.status !== "IN_QUEUE") {
      answer.logs = [
        { message: "Generating", level: "INFO", source: "user", timestamp: new Date(now()).toISOString() },
      ];
    }
    if (r.status === "COMPLETED" && r.error?.errorType) {
      answer.error = r.error.body && (r.error.body as { detail?: unknown }).detail;
      answer.error_type = r.error.errorType;
    }
    return answer;
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, { detail: err instanceof Error ? err.message : String(err) });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const find = (id: string) => {
    const r = submitted.get(id);
    if (!r) throw new Error(`fal stand-in: no request ${id}`);
    return r;
  };

  return {
    url: base,
    jwksUrl: `${base}/.well-known/jwks.json`,
    key,
    requests,
    submitted,
    webhooks,
    refuseSubmits(status, count = 1, retryAfter) {
      for (let i = 0; i < count; i++) refusals.push({ status, ...(retryAfter === undefined ? {} : { retryAfter }) });
    },
    refuseLooks(status, opts = {}) {
      for (let i = 0; i < (opts.count ?? 1); i++) {
        lookRefusals[opts.at ?? "status"].push({
          status,
          ...(opts.retryAfter === undefined ? {} : { retryAfter: opts.retryAfter }),
        });
      }
    },
    step: (id) => track(step(find(id))) as Promise<void>,
    finish: (id) => track(finish(find(id))) as Promise<void>,
    webhooksDelivered(count) {
      if (webhooks.length >= count) return Promise.resolve();
      return new Promise((resolve) => deliveryWaiters.push({ count, resolve }));
    },
    signWebhook: (requestId, body, opts) => signed(requestId, body, opts),
    rotateKey() {
      signing = generateKeyPairSync("ed25519");
      keyNumber++;
    },
    async close() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      closing.abort();
      await Promise.allSettled([...pendingWork]);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
