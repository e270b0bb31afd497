// Submit-and-poll providers (contracts/upstream.ts) used in place: submit, then poll, sleeping the delays the
// provider asks for, until it is done. For tests of a provider and for callers that may hold their slot;
// a job waits through `ctx.awaitUpstream`, which holds none.

import { randomUUID } from "node:crypto";
import type { UpstreamProvider } from "../contracts/upstream.ts";
import { errorBackoff, MAX_POLL_ERRORS } from "./poll-backoff.ts";
import { sandboxSleep } from "./sandbox.ts";

/** A request as the one-call providers took it, with its abort signal and progress callback. */
export type InPlace<Request> = Request & {
  signal?: AbortSignal;
  onProgress?: (fraction: number, message?: string) => unknown;
};

/**
 * `request` may carry `signal` and `onProgress` as the old one-call providers took them: they are taken off
 * before the request is submitted.
 */
export async function pollToEnd<Request extends object, Result>(
  provider: UpstreamProvider<Request, Result>,
  request: InPlace<Request>,
): Promise<Result> {
  const { signal = new AbortController().signal, onProgress, ...rest } = request;
  const report = async (fraction: number, message?: string) => void (await onProgress?.(fraction, message));
  const handle = await provider.submit(rest as Request, { idempotencyKey: `in-place:${randomUUID()}`, signal });
  let delay = handle.pollAfterMs ?? 0;
  let errors = 0;
  try {
    for (;;) {
      if (delay > 0) await sandboxSleep(delay, signal);
      if (signal.aborted) throw signal.reason;
      let polled;
      try {
        polled = await provider.poll(handle, { signal, onProgress: report });
      } catch (err) {
        // As the runtime does: a failed look is tried again with backoff, a few times.
        if (signal.aborted || ++errors >= MAX_POLL_ERRORS) throw err;
        delay = errorBackoff(errors);
        continue;
      }
      errors = 0;
      if (polled.state === "done") return polled.result;
      if (polled.state === "failed") throw polled.error;
      if (polled.progress !== undefined) await report(polled.progress, polled.message);
      delay = Math.max(polled.pollAfterMs ?? 250, 1);
    }
  } catch (err) {
    // Given up (aborted, or the looks kept failing): the upstream's work is of no use to anyone.
    await provider.cancel?.(handle).catch(() => {});
    throw err;
  } finally {
    await provider.release?.(handle).catch(() => {});
  }
}
