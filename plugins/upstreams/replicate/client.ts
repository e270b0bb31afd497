// The Replicate protocol client (issue 39 item 3), written from Replicate's HTTP API reference
// (https://replicate.com/docs/reference/http: models.predictions.create, predictions.create, predictions.get,
// predictions.cancel) and its prediction lifecycle and webhook guides.
//
// - Submit: `POST {base}/models/{owner}/{name}/predictions` for an `owner/name` model (official models), or
//   `POST {base}/predictions` with `version` for `owner/name:<version>` or a bare version id; body
//   `{input, webhook?, webhook_events_filter: ["completed"]}` (one call when the prediction ends, which is all
//   the job needs to wake up); `Authorization: Bearer <token>`. `Prefer: wait` (sync mode, the answer held
//   open up to 60 s) is deliberately not sent: the job polls without holding a slot.
// - Idempotency: Replicate documents no idempotency key for creating a prediction, so `idempotencyKey` is not
//   sent. What keeps a job from submitting twice is the stored handle (a restart polls the same prediction)
//   and the gateway trying another route only when this client says the work was surely not taken.
// - The prediction's `urls.get` and `urls.cancel` are kept in the handle and used as given, as the docs ask;
//   only when they are missing or on another origin than the base URL (where the token must never go) are
//   the documented paths `{base}/predictions/{id}` and `{base}/predictions/{id}/cancel` used instead.
// - Errors are problem+json (`{title?, detail, status}`); a 429 carries `Retry-After` (and `retry_after` in the
//   body). Every message is cleaned and has the token redacted; no URL is put in one.

import { cleanUpstreamText, type OutboundGuard, redactKey, UPSTREAM_TEXT_LIMITS } from "mediagate/plugin";
import { noAnswerReason, parseRetryAfter, surelyNotTaken } from "../call-failures.ts";
import {
  type ProtocolClient,
  type ProtocolClientFactory,
  type ProtocolHandle,
  type ProtocolPoll,
  UpstreamCallError,
} from "../protocol.ts";
import { verifyReplicateWebhook } from "./webhook.ts";
import {
  CALL_LIMITS,
  ENDED_STATUSES,
  MODEL_ID,
  PENDING_STATUSES,
  REPLICATE_BASE_URL,
  REPLICATE_ERRORS,
  STEPS,
  SUCCEEDED_STATUS,
} from "./wire.ts";

type OutboundRequest = NonNullable<Parameters<OutboundGuard["fetch"]>[1]>;
type OutboundResponse = Awaited<ReturnType<OutboundGuard["fetch"]>>;

/** Where a model id's prediction is created, and the body fields naming the model there. */
export function createTarget(baseUrl: string, model: string): { url: string; version?: string } {
  const m = MODEL_ID.exec(model);
  if (!m) throw new UpstreamCallError(REPLICATE_ERRORS.badModel, { accepted: false });
  const [, owner, name, version, bare] = m;
  if (bare) return { url: `${baseUrl}/predictions`, version: bare };
  if (version) return { url: `${baseUrl}/predictions`, version };
  return { url: `${baseUrl}/models/${encodeURIComponent(owner!)}/${encodeURIComponent(name!)}/predictions` };
}

/** Retry-After as delay-seconds or an HTTP date, else the body's `retry_after` seconds; in ms. */
export function retryAfterMs(headers: Record<string, string>, body: unknown, now = Date.now()): number | undefined {
  const header = parseRetryAfter(headers["retry-after"], now);
  if (header !== undefined) return header;
  const inBody = (body as { retry_after?: unknown } | null)?.retry_after;
  return typeof inBody === "number" && Number.isFinite(inBody) && inBody >= 0 ? Math.round(inBody * 1000) : undefined;
}

/** The last tqdm progress bar in a prediction's logs (`' 45%|████▌     | 9/20 [...]'`), as Replicate's own client reads them. */
export function progressFromLogs(logs: unknown): number | undefined {
  if (typeof logs !== "string" || logs === "") return undefined;
  const tail = logs.length > 8192 ? logs.slice(-8192) : logs;
  const lines = tail.split(/[\r\n]+/).reverse();
  for (const line of lines) {
    const m = /^\s*(\d{1,3})%\s*\|.*?\|\s*(\d+)\/(\d+)/.exec(line);
    if (!m) continue;
    const total = Number(m[3]);
    if (total > 0) return Math.min(1, Number(m[2]) / total);
    return Math.min(1, Number(m[1]) / 100);
  }
  return undefined;
}

/** The media URLs of a prediction's `output`: one URL, or a list of them (other shapes: a route's output path). */
export function replicateOutputUrls(output: unknown): string[] {
  const list = typeof output === "string" ? [output] : Array.isArray(output) ? output : [];
  return list.filter((u): u is string => typeof u === "string" && /^(https?:|data:)/i.test(u));
}

interface Prediction {
  id: string;
  status: string;
  urls: { get?: string; cancel?: string };
  output?: unknown;
  error?: unknown;
  logs?: unknown;
}

function asPrediction(body: unknown): Prediction | null {
  if (!body || typeof body !== "object") return null;
  const p = body as Record<string, unknown>;
  if (typeof p.id !== "string" || p.id === "" || p.id.length > 200 || typeof p.status !== "string") return null;
  const urls = p.urls && typeof p.urls === "object" ? (p.urls as Record<string, unknown>) : {};
  return {
    id: p.id,
    status: p.status,
    urls: {
      ...(typeof urls.get === "string" ? { get: urls.get } : {}),
      ...(typeof urls.cancel === "string" ? { cancel: urls.cancel } : {}),
    },
    output: p.output,
    error: p.error,
    logs: p.logs,
  };
}

function parseJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(Buffer.from(bytes).toString("utf8"));
  } catch {
    return null;
  }
}

export const replicateClient: ProtocolClientFactory = (options) => {
  const baseUrl = (options.baseUrl || REPLICATE_BASE_URL).replace(/(?<!\/)\/+$/, "");
  const baseOrigin = new URL(baseUrl).origin;
  const outbound: OutboundGuard = options.outbound;
  const token = options.key;

  /** Upstream words made safe to keep: cleaned, capped, the token (and anything like a key) removed. */
  const safe = (text: unknown): string =>
    cleanUpstreamText(redactKey(typeof text === "string" ? text : "", token), UPSTREAM_TEXT_LIMITS.errorMessage);

  /** The problem+json `detail` (or `title`) of an error answer. */
  const detailOf = (body: unknown): string => {
    const b = body as { detail?: unknown; title?: unknown } | null;
    return safe(typeof b?.detail === "string" ? b.detail : b?.title);
  };

  /** A URL from a prediction, used only on the base URL's origin (the token goes with it). */
  const onOrigin = (url: string | undefined): string | undefined => {
    if (!url) return undefined;
    try {
      return new URL(url).origin === baseOrigin ? url : undefined;
    } catch {
      return undefined;
    }
  };

  async function call(
    url: string,
    request: OutboundRequest & { step: string },
  ): Promise<{ response: OutboundResponse; body: unknown }> {
    const { step, ...rest } = request;
    let response: OutboundResponse;
    try {
      response = await outbound.fetch(url, {
        ...rest,
        headers: {
          authorization: `Bearer ${token}`,
          accept: "application/json",
          ...(rest.body === undefined ? {} : { "content-type": "application/json" }),
        },
        acceptStatus: () => true,
        allowHttp: outbound.allowPrivate,
      });
    } catch (err) {
      if (rest.signal?.aborted) throw rest.signal.reason;
      throw callFailure(step, err);
    }
    return { response, body: parseJson(response.body) };
  }

  /** A call that got no (whole) answer: accepted unless the prediction was surely not created. */
  function callFailure(step: string, err: unknown): UpstreamCallError {
    return new UpstreamCallError(REPLICATE_ERRORS.unreachable(step, noAnswerReason(err)), {
      accepted: !surelyNotTaken(err),
      cause: err,
    });
  }

  function answerFailure(step: string, response: OutboundResponse, body: unknown, accepted: boolean) {
    const after = retryAfterMs(response.headers, body);
    return new UpstreamCallError(REPLICATE_ERRORS.refused(step, response.status, detailOf(body)), {
      status: response.status,
      ...(after === undefined ? {} : { retryAfterMs: after }),
      accepted,
    });
  }

  function handleUrls(handle: ProtocolHandle): { get: string; cancel: string } {
    const id = encodeURIComponent(handle.id);
    return {
      get: onOrigin(handle.data.get) ?? `${baseUrl}/predictions/${id}`,
      cancel: onOrigin(handle.data.cancel) ?? `${baseUrl}/predictions/${id}/cancel`,
    };
  }

  const client: ProtocolClient = {
    protocol: "replicate",

    async submit(request) {
      const target = createTarget(baseUrl, request.model);
      const body = {
        ...(target.version ? { version: target.version } : {}),
        input: request.input,
        ...(request.webhookUrl ? { webhook: request.webhookUrl, webhook_events_filter: ["completed"] } : {}),
      };
      const { response, body: answer } = await call(target.url, {
        step: STEPS.submit,
        method: "POST",
        body: JSON.stringify(body),
        signal: request.signal,
        ...CALL_LIMITS.submit,
      });
      // Any error answer (4xx, 429, 5xx) means no prediction was created: the next route may be tried.
      if (response.status < 200 || response.status >= 300) throw answerFailure(STEPS.submit, response, answer, false);
      const prediction = asPrediction(answer);
      // A 2xx without a readable prediction may still have started one: not retried elsewhere.
      if (!prediction)
        throw new UpstreamCallError(REPLICATE_ERRORS.unreadable(STEPS.submit), {
          status: response.status,
          accepted: true,
        });
      const data: Record<string, string> = {};
      const get = onOrigin(prediction.urls.get);
      const cancel = onOrigin(prediction.urls.cancel);
      if (get) data.get = get;
      if (cancel) data.cancel = cancel;
      return { id: prediction.id, data };
    },

    async poll(handle, signal): Promise<ProtocolPoll> {
      const { response, body } = await call(handleUrls(handle).get, {
        step: STEPS.poll,
        signal,
        ...CALL_LIMITS.poll,
      });
      if (response.status === 404 || response.status === 410)
        return {
          state: "failed",
          error: new UpstreamCallError(REPLICATE_ERRORS.gone, { status: response.status, accepted: true }),
        };
      if (response.status < 200 || response.status >= 300) throw answerFailure(STEPS.poll, response, body, true);
      const prediction = asPrediction(body);
      if (!prediction) throw new UpstreamCallError(REPLICATE_ERRORS.unreadable(STEPS.poll), { accepted: true });
      if (prediction.status === SUCCEEDED_STATUS) return { state: "done", output: prediction.output };
      if (ENDED_STATUSES.has(prediction.status)) {
        const message =
          prediction.status === "canceled"
            ? REPLICATE_ERRORS.canceled
            : prediction.status === "aborted"
              ? REPLICATE_ERRORS.aborted
              : REPLICATE_ERRORS.failed(safe(typeof prediction.error === "string" ? prediction.error : ""));
        return { state: "failed", error: new UpstreamCallError(message, { accepted: true }) };
      }
      // `starting`, `processing`, and any status added after this was written: still waiting.
      const progress = PENDING_STATUSES.has(prediction.status) ? progressFromLogs(prediction.logs) : undefined;
      return { state: "pending", ...(progress === undefined ? {} : { progress }) };
    },

    async cancel(handle) {
      const { response, body } = await call(handleUrls(handle).cancel, {
        step: STEPS.cancel,
        method: "POST",
        ...CALL_LIMITS.cancel,
      });
      // A prediction already ended or gone has nothing left to stop.
      if (response.status === 404 || response.status === 409 || response.status === 422) return;
      if (response.status < 200 || response.status >= 300) throw answerFailure(STEPS.cancel, response, body, true);
    },

    outputUrls: replicateOutputUrls,

    async verifyWebhook(request) {
      if (!options.webhookSecret) return null;
      return verifyReplicateWebhook(options.webhookSecret, request);
    },
  };
  return client;
};
