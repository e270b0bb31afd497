// The messages between test/run.ts (the coordinator) and its workers (test/helpers/run-worker.ts).

export type ToWorker = { type: "run"; file: string } | { type: "finish" };
export type FromWorker =
  | { type: "output"; file: string; text: string }
  /** An unhandled rejection or uncaught exception while the file ran: one more failure of it. */
  | { type: "error"; file: string; text: string }
  | { type: "result"; file: string; passed: number; failed: number; skipped: number; errors: string[]; ms: number }
  | { type: "stray"; text: string }
  | { type: "done"; output: string; errors: string[]; ms: number };

/** How long a worker's lifecycle cleanups may take (test/run.ts kills a worker that is not gone by then). */
export const CLEANUP_LIMIT_S = 300;
