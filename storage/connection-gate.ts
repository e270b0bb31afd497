// One gate to the database's connections, with two priorities: requests (the default) and background work (job
// attempts, webhook delivery).
//
// Under a burst of requests, every connection (on PGlite: the one connection) is wanted by hundreds of
// them, and the statements of a job that should start now would wait behind all of them, first come, first
// served: no job of a burst would start before its last request was answered. So a freed connection goes to
// background work first (work already accepted finishes before more is taken in: the burst's jobs start
// while it is still arriving, and its later requests wait a little longer), except that a waiting request
// gets at least one connection in every REQUEST_SHARE, so requests are never starved by a busy worker. Requests
// keep every connection when no background work waits (why not one for one: docs/decisions.md, "two lanes").
//
// Which priority a statement has is said by the kysely it goes through: `Database.background` (storage/db.ts)
// takes its connections with the background priority, `Database.kysely` with the requests'; both share the same
// connections. The job runtime and the webhook delivery loop use the first, so a statement that reaches the
// requests' priority by another way (a plugin's helper, a blob's retention row) loses its priority, never its
// correctness. (Not the async context: docs/decisions.md, "the lanes without an AsyncLocalStorage".)
//
// A connection that is handed on goes to its next holder in a later turn of the event loop (setImmediate), not in
// the releasing promise's microtasks, where a queue of waiting statements would run one after another without
// the loop reaching its I/O phase (what that did: docs/decisions.md, "a turn of its own").
//
// Uncontended connections are taken at once, but not for ever without a turn: on PGlite a statement resolves in
// microtasks, so a request whose statements never wait, and the job it queues (the queue's fetch, the
// attempt, its end, pg-boss's completion, all on this thread) can run to the end inside the callback that
// read the request, and the next request's callback after it, and so on (docs/decisions.md, "the lanes' turn
// budget"). So once the loop
// has not turned for TURN_BUDGET_MS while connections were being taken, a free connection is given after a turn.
import { setImmediate } from "node:timers";

export type Priority = "requests" | "background";

/** A waiting request gets at least one connection in this many. */
const REQUEST_SHARE = 4;

/** How long connections are taken at once without the event loop turning (see the file's header). */
export const TURN_BUDGET_MS = 5;

/** A fixed number of connections, shared by the two priorities (see the file's header). */
export class ConnectionGate {
  #free: number;
  readonly #waiting: Record<Priority, Array<(release: () => void) => void>> = { requests: [], background: [] };
  /** Connections given to background work in a row while a request waited. */
  #passedOver = 0;
  /** When connections began to be taken at once in this turn of the event loop; undefined once it has turned. */
  #turnBegan: number | undefined;

  constructor(connections: number) {
    this.#free = connections;
  }

  /** Resolves with the function that gives the connection back (once; later calls do nothing). */
  acquire(priority: Priority): Promise<() => void> {
    if (this.#free > 0) {
      this.#free--;
      const release = this.#releaser();
      if (!this.#turnOverdue()) return Promise.resolve(release);
      return new Promise((resolve) => setImmediate(() => resolve(release)));
    }
    return new Promise((resolve) => this.#waiting[priority].push(resolve));
  }

  /** Whether this turn of the event loop has been taking connections for longer than TURN_BUDGET_MS. */
  #turnOverdue(): boolean {
    const now = performance.now();
    if (this.#turnBegan === undefined) {
      this.#turnBegan = now;
      setImmediate(() => (this.#turnBegan = undefined));
      return false;
    }
    return now - this.#turnBegan > TURN_BUDGET_MS;
  }

  #releaser(): () => void {
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.#handOn();
    };
  }

  #handOn(): void {
    const requestsWait = this.#waiting.requests.length > 0;
    let next: ((release: () => void) => void) | undefined;
    if (!(requestsWait && this.#passedOver >= REQUEST_SHARE - 1)) {
      next = this.#waiting.background.shift();
      if (next && requestsWait) this.#passedOver++;
    }
    if (!next) {
      next = this.#waiting.requests.shift();
      if (next) this.#passedOver = 0;
    }
    if (!next) {
      this.#free++;
      return;
    }
    const release = this.#releaser();
    setImmediate(() => next(release));
  }
}
