// The state machines the spec gives several job kinds, declared once. A job kind spreads one and adds what
// is its own (failure text, retries, time-out, runner): `{ ...QUEUED_PROCESSING_COMPLETE, failError, run }`.

/**
 * The states of a job kind and the moves between them: the fields of the kernel's JobKindDeclaration
 * (core/jobs.ts, which enforces them) that a machine below fills, declared here so the floor needs no kernel
 * type. A change to one side that the other does not follow fails the typecheck where a machine is spread.
 */
export interface StateMachine {
  /** Every state, in the spec's words. */
  states: readonly string[];
  /** The state a submit creates. */
  initial: string;
  /** Legal moves: from a state to the states it may go to. Terminal states have none. */
  transitions: Readonly<Record<string, readonly string[]>>;
  /** Terminal states and what they mean: `failure` refunds the job's credits. */
  terminal: Readonly<Record<string, "success" | "failure">>;
  /** Where the runtime moves a job it fails itself (crash, expiry, unexpected error); a `failure` state. */
  failState: string;
}

/**
 * A job that moves through `steps` in order (skipping ahead allowed), then ends in `success` or `failure`
 * from any of them, under the names its area uses. The machines below are all of this form.
 */
export function stepsThen(steps: readonly [string, ...string[]], success: string, failure: string): StateMachine {
  return {
    states: [...steps, success, failure],
    initial: steps[0],
    transitions: Object.fromEntries(steps.map((step, i) => [step, [...steps.slice(i + 1), success, failure]])),
    terminal: { [success]: "success", [failure]: "failure" },
    failState: failure,
  };
}

/** Video, video upscale and music jobs: `queued` at submit, `processing`, then `complete` or `error`. */
export const QUEUED_PROCESSING_COMPLETE: StateMachine = stepsThen(["queued", "processing"], "complete", "error");

/**
 * A job with no step in between: `initial`, then `success` or `failure`, under the names its area uses
 * (social downloads: `pending`, then `complete` or `failed`; a voiceover: `processing`, then `success` or
 * `failed`).
 */
export const oneStepStates = (initial: string, success: string, failure: string): StateMachine =>
  stepsThen([initial], success, failure);

/** Image generation and image upscale (polled at /image-status): `pending`, then `success` or `failed`. */
export const PENDING_SUCCESS_FAILED: StateMachine = oneStepStates("pending", "success", "failed");

/** `queued`, then `success` or `failure` (a synchronous area's bookkeeping job, a third party's job, a test's). */
export const queuedThen = (success: string, failure: string): StateMachine => oneStepStates("queued", success, failure);
