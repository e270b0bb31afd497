// fal's queue API as a protocol client (plugins/upstreams/protocol.ts). Submit: POST {base_url}/{model} with
// `Authorization: Key <key>` and the input as the JSON body, `?fal_webhook=<url>` when callbacks are on. The
// answer's status_url, response_url and cancel_url are kept in the handle and used as given: fal serves them
// under the app's owner and name only (a model `fal-ai/flux/dev` polls at /fal-ai/flux/requests/<id>/status),
// so rebuilding them from the model id would ask the wrong path. A look GETs status_url (IN_QUEUE with its
// queue_position, IN_PROGRESS, COMPLETED), then response_url for the result; a failed request answers its error
// there (422 with the model's validation `detail`, or `detail` and `error_type` for a request error), which
// becomes a failed state with fal's words made safe. Cancel is PUT cancel_url.
//
// Every call goes through the outbound guard (no redirect followed, a deadline, a size cap), and only to the
// base URL's origin: a handle or an answer naming another host is refused, so the key never leaves fal's
// origin. Errors carry the status and fal's `detail` with the key, anything like a key and every URL cut out;
// never the key, never a URL (401/403 bodies are not repeated at all).
//
// fal documents no idempotency key for a submit, so `idempotencyKey` is not sent: a restart polls the stored
// handle again and never submits twice (the gateway's part), and a submit that got no answer is not accepted.
import type { OutboundGuard } from "mediagate/plugin";
import { noAnswerReason, parseRetryAfter, surelyNotTaken } from "../call-failures.ts";
import {
  type ProtocolClient,
  type ProtocolClientFactory,
  type ProtocolHandle,
  type ProtocolPoll,
  type ProtocolSubmit,
  UpstreamCallError,
} from "../protocol.ts";
import { errorDetail, errorType, isObject, parseJson, safeText } from "./answers.ts";
import { falWebhookVerifier } from "./webhook.ts";
import { ERROR_TYPE_HEADER, FAL_BASE_URL, STATUS, type StatusAnswer, TEXT, WEBHOOK_QUERY } from "./wire.ts";

/** A submit answers at once (the work is queued): 30 s covers a slow edge. */
const SUBMIT_TIMEOUT_MS = 30_000;
const STATUS_TIMEOUT_MS = 15_000;
/** A result is JSON naming media URLs, but a model may inline a data URI: allow a minute and 25 MB. */
const RESULT_TIMEOUT_MS = 60_000;
const RESULT_MAX_BYTES = 25_000_000;
const SMALL_MAX_BYTES = 1_000_000;

const URL_FIELDS = ["status_url", "response_url", "cancel_url"] as const;

type Answer = { status: number; headers: Record<string, string>; body: unknown };

/** fal's model ids: an owner, an app and an optional endpoint path (`fal-ai/flux/dev`), path segments only. */
const MODEL_ID = /^(?!\.+(\/|$))[A-Za-z0-9_.-]+(\/(?!\.+(\/|$))[A-Za-z0-9_.-]+)+$/;

export const falClient: ProtocolClientFactory = (options) => {
  const key = options.key;
  const base = (options.baseUrl || FAL_BASE_URL).replace(/(?<!\/)\/+$/, "");
  const origin = new URL(base).origin;
  const guard: OutboundGuard = options.outbound;
  const verifier = falWebhookVerifier({
    outbound: guard,
    ...(options.jwksUrl === undefined ? {} : { jwksUrl: options.jwksUrl }),
  });

  const sameOrigin = (text: unknown): text is string => {
    if (typeof text !== "string") return false;
    try {
      const url = new URL(text);
      return url.origin === origin && !url.username && !url.password;
    } catch {
      return false;
    }
  };

  /** One call to fal; every status answered is read here. Throws the guard's error when no answer came. */
  async function call(
    url: string,
    init: { method: string; body?: string; timeoutMs: number; maxBytes: number; signal?: AbortSignal },
  ): Promise<Answer> {
    const res = await guard.fetch(url, {
      method: init.method,
      headers: {
        authorization: `Key ${key}`,
        accept: "application/json",
        ...(init.body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(init.body === undefined ? {} : { body: init.body }),
      timeoutMs: init.timeoutMs,
      maxBytes: init.maxBytes,
      ...(init.signal ? { signal: init.signal } : {}),
      acceptStatus: () => true,
      // Plain http only where the guard allows private addresses (development, tests on 127.0.0.1).
      allowHttp: guard.allowPrivate,
    });
    return { status: res.status, headers: res.headers, body: parseJson(res.body) };
  }

  const retryAfter = (a: Answer) => parseRetryAfter(a.headers["retry-after"]);

  async function submit(request: ProtocolSubmit): Promise<ProtocolHandle> {
    if (!MODEL_ID.test(request.model)) throw new UpstreamCallError(TEXT.badModel, { accepted: false });
    const url = new URL(`${base}/${request.model}`);
    if (request.webhookUrl) url.searchParams.set(WEBHOOK_QUERY, request.webhookUrl);
    let answer: Answer;
    try {
      answer = await call(url.href, {
        method: "POST",
        body: JSON.stringify(request.input),
        timeoutMs: SUBMIT_TIMEOUT_MS,
        maxBytes: SMALL_MAX_BYTES,
        signal: request.signal,
      });
    } catch (err) {
      if (request.signal.aborted) throw request.signal.reason;
      throw new UpstreamCallError(TEXT.submitFailed(noAnswerReason(err)), { accepted: !surelyNotTaken(err) });
    }
    if (answer.status < 200 || answer.status >= 300) {
      const ms = retryAfter(answer);
      throw new UpstreamCallError(TEXT.submitAnswered(answer.status, errorDetail(answer.status, answer.body, key)), {
        status: answer.status,
        accepted: false,
        ...(ms === undefined ? {} : { retryAfterMs: ms }),
      });
    }
    const body = answer.body;
    const id = isObject(body) && typeof body.request_id === "string" ? body.request_id : "";
    if (!id || !isObject(body) || !URL_FIELDS.every((f) => sameOrigin(body[f]))) {
      // fal answered 2xx: it may well have taken the work, so no other route may be tried.
      throw new UpstreamCallError(TEXT.submitMalformed, { status: answer.status, accepted: true });
    }
    const data: Record<string, string> = { request_id: id };
    for (const f of URL_FIELDS) data[f] = body[f] as string;
    return { id, data };
  }

  /** The handle's URL for `field`, when it is one of fal's (the base URL's origin). */
  function handleUrl(handle: ProtocolHandle, field: (typeof URL_FIELDS)[number]): string {
    const url = handle.data[field];
    if (!sameOrigin(url)) throw new UpstreamCallError(TEXT.badHandle, { accepted: true });
    return url;
  }

  /** A look's failure (no answer, or an answer that is not fal's verdict): the runtime looks again. */
  function lookError(what: string, err: unknown, signal: AbortSignal): never {
    if (signal.aborted) throw signal.reason;
    throw new UpstreamCallError(TEXT.lookFailed(what, noAnswerReason(err)), { accepted: true });
  }

  function answeredError(what: string, a: Answer): UpstreamCallError {
    const ms = retryAfter(a);
    return new UpstreamCallError(TEXT.lookAnswered(what, a.status, errorDetail(a.status, a.body, key)), {
      status: a.status,
      accepted: true,
      ...(ms === undefined ? {} : { retryAfterMs: ms }),
    });
  }

  async function poll(handle: ProtocolHandle, signal: AbortSignal): Promise<ProtocolPoll> {
    const statusUrl = handleUrl(handle, "status_url");
    let look: Answer;
    try {
      look = await call(statusUrl, { method: "GET", timeoutMs: STATUS_TIMEOUT_MS, maxBytes: SMALL_MAX_BYTES, signal });
    } catch (err) {
      lookError("status", err, signal);
    }
    if (look.status === 404) return { state: "failed", error: failure(TEXT.unknownRequest, 404) };
    if (look.status < 200 || look.status >= 300) throw answeredError("status", look);
    if (!isObject(look.body)) throw new UpstreamCallError(TEXT.lookMalformed("status"), { accepted: true });
    const status = look.body as unknown as StatusAnswer;
    switch (status.status) {
      case STATUS.inQueue: {
        const position = typeof status.queue_position === "number" ? status.queue_position : undefined;
        return { state: "pending", message: TEXT.inQueue(position) };
      }
      case STATUS.inProgress:
        return { state: "pending", message: TEXT.inProgress };
      case STATUS.completed:
        return await result(handle, status, signal);
      default:
        throw new UpstreamCallError(TEXT.unknownStatus, { status: look.status, accepted: true });
    }
  }

  const failure = (message: string, status?: number) =>
    new UpstreamCallError(message, { accepted: true, ...(status === undefined ? {} : { status }) });

  async function result(handle: ProtocolHandle, status: StatusAnswer, signal: AbortSignal): Promise<ProtocolPoll> {
    const responseUrl = handleUrl(handle, "response_url");
    let answer: Answer;
    try {
      answer = await call(responseUrl, {
        method: "GET",
        timeoutMs: RESULT_TIMEOUT_MS,
        maxBytes: RESULT_MAX_BYTES,
        signal,
      });
    } catch (err) {
      lookError("result", err, signal);
    }
    if (answer.status >= 200 && answer.status < 300) {
      if (answer.body === undefined) throw new UpstreamCallError(TEXT.lookMalformed("result"), { accepted: true });
      return { state: "done", output: answer.body };
    }
    // The request ended in an error when fal says so: a COMPLETED status carrying `error`, an error type, or a
    // 4xx answer with fal's `detail` (the model refused the input). A bare 5xx or 429 is the look failing.
    const type = errorType(answer.body, answer.headers[ERROR_TYPE_HEADER]) ?? errorType(status, undefined);
    const detail = errorDetail(answer.status, answer.body, key);
    const statusSaysFailed = typeof status.error === "string" && status.error !== "";
    const isVerdict =
      type !== undefined ||
      statusSaysFailed ||
      (answer.status >= 400 &&
        answer.status < 500 &&
        answer.status !== 429 &&
        answer.status !== 401 &&
        answer.status !== 403);
    if (!isVerdict) throw answeredError("result", answer);
    const words = detail || (statusSaysFailed ? `: ${safeText(status.error as string, key)}` : "");
    const message = type ? TEXT.requestFailedType(type, words) : TEXT.requestFailed(answer.status, words);
    return { state: "failed", error: failure(message, answer.status) };
  }

  async function cancel(handle: ProtocolHandle): Promise<void> {
    const cancelUrl = handleUrl(handle, "cancel_url");
    let answer: Answer;
    try {
      answer = await call(cancelUrl, { method: "PUT", timeoutMs: STATUS_TIMEOUT_MS, maxBytes: SMALL_MAX_BYTES });
    } catch (err) {
      throw new UpstreamCallError(TEXT.cancelFailed(noAnswerReason(err)), { accepted: true });
    }
    // 202 CANCELLATION_REQUESTED; 400 ALREADY_COMPLETED and 404 NOT_FOUND leave nothing to stop.
    if ((answer.status >= 200 && answer.status < 300) || answer.status === 400 || answer.status === 404) return;
    throw new UpstreamCallError(TEXT.cancelAnswered(answer.status), { status: answer.status, accepted: true });
  }

  const client: ProtocolClient = {
    protocol: "fal",
    submit,
    poll,
    cancel,
    outputUrls: falOutputUrls,
    verifyWebhook: (request) => verifier(request),
  };
  return client;
};

/** The media URLs of a fal result: images[].url, image.url, video.url, audio.url, audio_file.url. */
export function falOutputUrls(output: unknown): string[] {
  if (!isObject(output)) return [];
  const urls: string[] = [];
  const take = (file: unknown) => {
    if (isObject(file) && typeof file.url === "string" && file.url !== "") urls.push(file.url);
  };
  if (Array.isArray(output.images)) for (const image of output.images) take(image);
  for (const field of ["image", "video", "audio", "audio_file"]) take(output[field]);
  return urls;
}
