// A local stand-in for Replicate's predictions API, for tests and benchmarks (issue 39). It follows the
// public documentation, not our client:
// - https://replicate.com/docs/reference/http: `POST /v1/models/{owner}/{name}/predictions` and
//   `POST /v1/predictions` (`version` as a version id or `owner/name:version`) answer 201 with the prediction
//   object (id, model, version, input, logs, output, error, status, created_at, urls {get, cancel, stream},
//   webhook fields as given); `GET /v1/predictions/{id}`; `POST /v1/predictions/{id}/cancel` answers the
//   prediction. `Authorization: Bearer <token>`; a wrong or missing token is 401
//   `{"title":"Unauthenticated","detail":"You did not pass a valid authentication token","status":401}`;
//   errors are problem+json `{title?, detail, status}`; a throttled create is 429 with `Retry-After` and
//   `retry_after` in the body; a create without an object `input` is 422 with `invalid_fields`.
// - https://replicate.com/docs/topics/predictions/lifecycle: statuses starting -> processing -> succeeded,
//   failed (with `error`), canceled; `logs` carry the model's output (tqdm progress bars here).
// - https://replicate.com/docs/topics/webhooks (and .../verify-webhook): a `webhook` given on create receives
//   the prediction object as POSTed JSON when it completes (`webhook_events_filter: ["completed"]`), signed as
//   Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256>` over
//   `<id>.<timestamp>.<body>` with the `whsec_` secret); `GET /v1/webhooks/default/secret` answers `{key}`.
// Outputs are served by the stand-in itself, as Replicate serves them from its delivery host: a real small PNG,
// MP4 (H.264/AAC) or MP3 made once by ffmpeg, or on request a lying file (an HTML page named .png, zero bytes).

import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { newStandardWebhookSecret, standardWebhookHeaders } from "../../lib/standard-webhooks.ts";
import { readBody, sendJson } from "./http.ts";
import { ffmpegMedia, isLying, LYING_MEDIA, type MediaKind, type StandInMedia } from "./media.ts";

/** What a prediction's output is: real media, a list of two PNGs, or a file that lies about its type. */
export type ReplicateStandInOutput = "png" | "png-list" | "mp4" | "mp3" | "html-as-png" | "empty-png";

/** How predictions move: one status per GET (`on-poll`, the default), only by `step`/`finish` (`manual`), or by time. */
export type ReplicateStandInPace = "on-poll" | "manual" | { latencyMs: number };

export interface ReplicateStandInOptions {
  /** The token the stand-in accepts (default a fixed test token). */
  token?: string;
  /** The webhook signing secret (default a fresh `whsec_` secret). */
  webhookSecret?: string;
  pace?: ReplicateStandInPace;
  /** The output of every prediction, or per model id (`owner/name`, or the version id); default png. */
  output?: ReplicateStandInOutput | ((model: string, input: Record<string, unknown>) => ReplicateStandInOutput);
  /** Predictions end `failed` with this `error` (all, or those whose model this returns a text for). */
  fail?: string | ((model: string, input: Record<string, unknown>) => string | undefined);
}

export interface ReplicateStandInRequest {
  method: string;
  /** Path and query, e.g. `/v1/predictions/abc`. */
  path: string;
  headers: Record<string, string>;
  /** The parsed JSON body, when there was one. */
  body: unknown;
}

export interface ReplicateStandInPrediction {
  id: string;
  model: string;
  version: string;
  input: Record<string, unknown>;
  logs: string;
  output: unknown;
  error: string | null;
  status: "starting" | "processing" | "succeeded" | "failed" | "canceled";
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
  urls: { get: string; cancel: string; stream: string };
  webhook?: string;
  webhook_events_filter?: string[];
  data_removed: boolean;
  metrics: Record<string, number>;
}

export interface ReplicateStandInWebhook {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** The receiver's status, or the error when it could not be reached. */
  status: number | string;
}

export interface ReplicateStandIn {
  /** The base URL to give as the provider's `base_url` (`http://127.0.0.1:<port>/v1`). */
  url: string;
  token: string;
  webhookSecret: string;
  /** Every API request, in order (output downloads are not API requests and are not listed). */
  requests: ReplicateStandInRequest[];
  predictions: Map<string, ReplicateStandInPrediction>;
  /** Webhook deliveries made, in order. */
  webhooks: ReplicateStandInWebhook[];
  /** The next `count` creates are refused with this status (503 or 429), with `Retry-After` when given. */
  refuseCreates(status: number, count?: number, retryAfterS?: number): void;
  /** Moves a prediction one status on (starting -> processing -> its end). */
  step(id: string): Promise<void>;
  /** Moves a prediction to its end (succeeded, or failed when it is to fail). */
  finish(id: string): Promise<void>;
  /** Resolves when `count` webhook deliveries have been made. */
  webhooksDelivered(count: number): Promise<void>;
  close(): Promise<void>;
}

const DEFAULT_TOKEN = "r8_standin0000000000000000000000000000000";
const UNAUTHENTICATED = {
  title: "Unauthenticated",
  detail: "You did not pass a valid authentication token",
  status: 401,
};
const NOT_FOUND = { title: "Not found", detail: "Not found.", status: 404 };

/** The ffmpeg arguments of the one small file of each kind the stand-in serves (a test pattern, a tone). */
const MEDIA_ARGS: Record<MediaKind, string[]> = {
  png: ["-f", "lavfi", "-i", "testsrc2=size=64x64:rate=1", "-frames:v", "1"],
  mp4: [
    ...["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=1"],
    ...["-f", "lavfi", "-i", "sine=frequency=440:duration=1"],
    ...["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest"],
  ],
  mp3: ["-f", "lavfi", "-i", "sine=frequency=440:duration=1", "-c:a", "libmp3lame", "-b:a", "64k"],
};

async function mediaOf(output: ReplicateStandInOutput): Promise<StandInMedia> {
  if (isLying(output)) return LYING_MEDIA[output];
  const kind = output === "png-list" ? "png" : output;
  return ffmpegMedia(kind, MEDIA_ARGS[kind]);
}

/** Replicate's prediction ids: 26 lowercase base-32 characters. */
function predictionId(): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz234567";
  return Array.from(randomBytes(26), (b) => alphabet[b % 32]).join("");
}

/** Replicate's errors are problem+json. */
function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  sendJson(res, status, body, status >= 400 ? { "content-type": "application/problem+json", ...headers } : headers);
}

const PROGRESS_LOGS = [
  "Using seed: 1234",
  "  0%|          | 0/4 [00:00<?, ?it/s]",
  " 50%|█████     | 2/4 [00:00<00:00, 13.52it/s]",
];

export async function startReplicateStandIn(options: ReplicateStandInOptions = {}): Promise<ReplicateStandIn> {
  const token = options.token ?? DEFAULT_TOKEN;
  const webhookSecret = options.webhookSecret ?? newStandardWebhookSecret();
  const pace = options.pace ?? "on-poll";
  const requests: ReplicateStandInRequest[] = [];
  const predictions = new Map<string, ReplicateStandInPrediction>();
  const outputs = new Map<string, ReplicateStandInOutput>();
  const failures = new Map<string, string>();
  const timers = new Set<NodeJS.Timeout>();
  const webhooks: ReplicateStandInWebhook[] = [];
  const webhookWaiters: Array<{ count: number; resolve: () => void }> = [];
  const inFlight = new Set<Promise<void>>();
  let refusal: { status: number; count: number; retryAfterS?: number } | null = null;
  let origin = "";

  const outputFor = (model: string, input: Record<string, unknown>): ReplicateStandInOutput =>
    typeof options.output === "function" ? options.output(model, input) : (options.output ?? "png");
  const failureFor = (model: string, input: Record<string, unknown>): string | undefined =>
    typeof options.fail === "function" ? options.fail(model, input) : options.fail;

  function deliverWebhook(p: ReplicateStandInPrediction): void {
    if (!p.webhook) return;
    const url = p.webhook;
    const body = JSON.stringify(p);
    const headers = {
      "content-type": "application/json",
      ...standardWebhookHeaders(webhookSecret, {
        id: `msg_${randomBytes(12).toString("hex")}`,
        timestamp: Math.floor(Date.now() / 1000),
        body,
      }),
    };
    const delivery = (async () => {
      let status: number | string;
      try {
        const res = await fetch(url, { method: "POST", headers, body, redirect: "manual" });
        await res.arrayBuffer().catch(() => {});
        status = res.status;
      } catch (err) {
        status = err instanceof Error ? err.message : String(err);
      }
      webhooks.push({ url, headers, body, status });
      for (const w of [...webhookWaiters]) {
        if (webhooks.length >= w.count) {
          webhookWaiters.splice(webhookWaiters.indexOf(w), 1);
          w.resolve();
        }
      }
    })();
    inFlight.add(delivery);
    void delivery.finally(() => inFlight.delete(delivery));
  }

  /** Predictions whose end is being made (the media may take a moment): ended once, whoever asks twice. */
  const ending = new Set<string>();

  async function end(p: ReplicateStandInPrediction): Promise<void> {
    if ((p.status !== "starting" && p.status !== "processing") || ending.has(p.id)) return;
    ending.add(p.id);
    const failure = failures.get(p.id);
    const output = outputs.get(p.id) ?? "png";
    const media = failure === undefined ? await mediaOf(output) : undefined;
    // Canceled while the media was being made: it stays canceled.
    if (p.status !== "starting" && p.status !== "processing") return;
    const now = new Date().toISOString();
    p.started_at ??= now;
    p.completed_at = now;
    if (!media) {
      p.status = "failed";
      p.error = failure ?? "failed";
      p.logs += `\nTraceback (most recent call last):\nRuntimeError: ${failure}`;
    } else {
      const file = (n: number) => `${origin}/files/${p.id}/${output}/out-${n}.${media.ext}`;
      p.output = output === "png-list" ? [file(0), file(1)] : file(0);
      p.status = "succeeded";
      p.logs += "\n100%|██████████| 4/4 [00:00<00:00, 14.01it/s]";
      p.metrics = { predict_time: 0.01, total_time: 0.02 };
    }
    deliverWebhook(p);
  }

  async function step(id: string): Promise<void> {
    const p = predictions.get(id);
    if (!p) throw new Error(`no prediction ${id}`);
    if (p.status === "starting") {
      p.status = "processing";
      p.started_at = new Date().toISOString();
      p.logs = PROGRESS_LOGS.join("\n");
    } else await end(p);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", origin);
    const raw = await readBody(req);

    // Output files, as Replicate's delivery host serves them: no token needed.
    const file = /^\/files\/([a-z0-9]+)\/([a-z0-9-]+)\/out-\d+\.\w+$/.exec(url.pathname);
    if (req.method === "GET" && file) {
      const media = await mediaOf(file[2] as ReplicateStandInOutput);
      res.writeHead(200, { "content-type": media.type, "content-length": String(media.bytes.byteLength) });
      res.end(media.bytes);
      return;
    }

    let body: unknown;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw.toString("utf8"));
      } catch {
        return send(res, 400, { detail: "Invalid JSON body", status: 400 });
      }
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers[k] = v;
    requests.push({ method: req.method ?? "GET", path: url.pathname + url.search, headers, body });

    if (req.headers.authorization !== `Bearer ${token}`) return send(res, 401, UNAUTHENTICATED);

    if (req.method === "GET" && url.pathname === "/v1/webhooks/default/secret")
      return send(res, 200, { key: webhookSecret });

    const create = /^\/v1\/(?:models\/([^/]+)\/([^/]+)\/)?predictions$/.exec(url.pathname);
    if (req.method === "POST" && create) {
      if (refusal && refusal.count > 0) {
        refusal.count--;
        const { status, retryAfterS } = refusal;
        const throttled = status === 429;
        return send(
          res,
          status,
          throttled
            ? {
                detail: `Request was throttled. Your rate limit resets in ~${retryAfterS ?? 1}s.`,
                status,
                ...(retryAfterS === undefined ? {} : { retry_after: retryAfterS }),
              }
            : { title: "Service Unavailable", detail: "The service is temporarily unavailable.", status },
          retryAfterS === undefined ? {} : { "retry-after": String(retryAfterS) },
        );
      }
      const b = (body ?? {}) as Record<string, unknown>;
      if (!b.input || typeof b.input !== "object" || Array.isArray(b.input))
        return send(res, 422, {
          title: "Input validation failed",
          detail: "- input: input is required and must be an object",
          status: 422,
          invalid_fields: [{ type: "required", field: "input", description: "input is required" }],
        });
      let model: string;
      let version: string;
      if (create[1] && create[2]) {
        model = `${decodeURIComponent(create[1])}/${decodeURIComponent(create[2])}`;
        version = "hidden";
      } else {
        if (typeof b.version !== "string" || b.version === "")
          return send(res, 422, {
            title: "Invalid version",
            detail: "The specified version does not exist (or perhaps you don't have permission to use it?)",
            status: 422,
          });
        // `owner/name:version`, a bare version id, or (since August 2025) an official model's `owner/name`.
        const [named, id] = b.version.includes(":")
          ? b.version.split(":", 2)
          : b.version.includes("/")
            ? [b.version, "hidden"]
            : [undefined, b.version];
        model = named ?? `standin/${id!.slice(0, 8)}`;
        version = id!;
      }
      const input = b.input as Record<string, unknown>;
      const id = predictionId();
      const p: ReplicateStandInPrediction = {
        id,
        model,
        version,
        input,
        logs: "",
        output: null,
        error: null,
        status: "starting",
        created_at: new Date().toISOString(),
        started_at: null,
        completed_at: null,
        urls: {
          get: `${origin}/v1/predictions/${id}`,
          cancel: `${origin}/v1/predictions/${id}/cancel`,
          stream: `${origin}/v1/stream/${id}`,
        },
        ...(typeof b.webhook === "string" ? { webhook: b.webhook } : {}),
        ...(Array.isArray(b.webhook_events_filter)
          ? { webhook_events_filter: b.webhook_events_filter.map(String) }
          : {}),
        data_removed: false,
        metrics: {},
      };
      predictions.set(id, p);
      outputs.set(id, outputFor(model, input));
      const failure = failureFor(model, input);
      if (failure !== undefined) failures.set(id, failure);
      if (typeof pace === "object") {
        const half = setTimeout(() => {
          timers.delete(half);
          if (p.status === "starting") void step(id);
        }, pace.latencyMs / 2);
        const full = setTimeout(() => {
          timers.delete(full);
          void end(p);
        }, pace.latencyMs);
        timers.add(half).add(full);
      }
      return send(res, 201, p);
    }

    const one = /^\/v1\/predictions\/([^/]+)(\/cancel)?$/.exec(url.pathname);
    const p = one ? predictions.get(decodeURIComponent(one[1]!)) : undefined;
    if (one && !p) return send(res, 404, NOT_FOUND);
    if (p && req.method === "GET" && !one![2]) {
      // The answer shows the status as it was; the GET then moves the prediction on (`on-poll`).
      const answer = JSON.parse(JSON.stringify(p));
      if (pace === "on-poll") await step(p.id);
      return send(res, 200, answer);
    }
    if (p && req.method === "POST" && one![2]) {
      if (p.status === "starting" || p.status === "processing") {
        p.status = "canceled";
        p.completed_at = new Date().toISOString();
        deliverWebhook(p);
      }
      return send(res, 200, p);
    }
    return send(res, 404, NOT_FOUND);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (!res.headersSent) send(res, 500, { detail: String(err), status: 500 });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: `${origin}/v1`,
    token,
    webhookSecret,
    requests,
    predictions,
    webhooks,
    refuseCreates(status, count = 1, retryAfterS) {
      refusal = { status, count, ...(retryAfterS === undefined ? {} : { retryAfterS }) };
    },
    step,
    async finish(id) {
      const p = predictions.get(id);
      if (!p) throw new Error(`no prediction ${id}`);
      await end(p);
    },
    webhooksDelivered(count) {
      if (webhooks.length >= count) return Promise.resolve();
      return new Promise((resolve) => webhookWaiters.push({ count, resolve }));
    },
    async close() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      await Promise.allSettled([...inFlight]);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
