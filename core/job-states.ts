// The state machines the spec gives several job kinds, declared once. A job kind spreads one and adds what
// is its own (failure text, retries, time-out, runner): `{ ...QUEUED_PROCESSING_COMPLETE, failError, run }`.
import type { JobKindDeclaration } from "./jobs.ts";

export type StateMachine = Pick<JobKindDeclaration, "states" | "initial" | "transitions" | "terminal" | "failState">;

/** Video, video upscale and music jobs: `queued` at submit, `processing`, then `complete` or `error`. */
export const QUEUED_PROCESSING_COMPLETE: StateMachine = {
  states: ["queued", "processing", "complete", "error"],
  initial: "queued",
  transitions: { queued: ["processing", "complete", "error"], processing: ["complete", "error"] },
  terminal: { complete: "success", error: "failure" },
  failState: "error",
};

/** Image generation and image upscale (polled at /image-status): `pending`, then `success` or `failed`. */
export const PENDING_SUCCESS_FAILED: StateMachine = {
  states: ["pending", "success", "failed"],
  initial: "pending",
  transitions: { pending: ["success", "failed"] },
  terminal: { success: "success", failed: "failure" },
  failState: "failed",
};

/**
 * A job with no step in between: `initial`, then `success` or `failure`, under the names its area uses
 * (social downloads: `pending`, then `complete` or `failed`; a voiceover: `processing`, then `success` or
 * `failed`).
 */
export function oneStepStates(initial: string, success: string, failure: string): StateMachine {
  return {
    states: [initial, success, failure],
    initial,
    transitions: { [initial]: [success, failure] },
    terminal: { [success]: "success", [failure]: "failure" },
    failState: failure,
  };
}

/** `queued`, then `success` or `failure` (a synchronous area's bookkeeping job, a third party's job, a test's). */
export const queuedThen = (success: string, failure: string): StateMachine => oneStepStates("queued", success, failure);
