// The wait for a job through the test kernel: GET a partner's status path until a condition holds of its body
// (test/helpers/restart.ts's `until`, over tk.request instead of a server process).
import type { TestKernel } from "../../testkit/index.ts";
import { until } from "./restart.ts";

/**
 * GETs `path` as the partner every `everyMs` until `done` holds of the body, and returns that answer. Any
 * status but 200 throws at once; after `timeoutMs` it throws with the last answer.
 */
export function pollStatus(
  tk: TestKernel,
  key: string,
  path: string,
  done: (body: any) => boolean,
  timeoutMs = 180_000,
  everyMs = 100,
) {
  return until(
    () => tk.request("GET", path, { key }),
    (res) => {
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
      return done(res.body);
    },
    path,
    timeoutMs,
    everyMs,
  );
}

/** A job's end on the status paths that answer complete or error. */
export const ended = (body: any): boolean => body.status === "complete" || body.status === "error";

/** An image's end at /image-status (anything but pending). */
export const notPending = (body: any): boolean => body.status !== "pending";
