// How long to wait after a poll of an upstream fails (the look itself, not the upstream's work), and when
// to stop: the kernel's parked waits (core/upstream-waits.ts) and a provider polled in place
// (lib/upstream.ts) back off alike.

/** Polls that fail in a row (the look itself, not the upstream's work) before the job fails. */
export const MAX_POLL_ERRORS = 6;
/** After `errors` failed looks in a row: 1, 2, 4 ... s, up to 60 s. */
export const errorBackoff = (errors: number) => Math.min(60_000, 1000 * 2 ** Math.max(0, errors - 1));
