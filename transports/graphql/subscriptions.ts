// `jobUpdates`: a job's current state, then its changes until it ends. Updates come from the kernel's
// pub/sub (`jobChannel(id)`, published by the job runtime on every progress and state write), which is Redis
// when REDIS_URL is set, so a subscriber on one instance sees a job that runs on another.
//
// A stream holds its caller's key open (core/revocations.ts): when the key is rotated or the partner
// deactivated, on any instance, the stream ends with a final error carrying the REST text a request with
// that key would now get; the key is also re-checked before each update delivered and periodically, in case
// the revocation message was lost. `endSubscriptions` ends every open stream with a final message; the HTTP
// server's shutdown calls it before closing its connections.
//
// A stream ends with an error by yielding it as its last item: the field's resolver (schema.ts) throws it,
// so SSE and graphql-ws clients both get a `next` whose `errors` carry it, then `complete`. (Rejecting
// next() instead would make graphql-ws close the whole socket with 4500.)
import { GraphQLError } from "graphql";
import { authenticate } from "../../core/auth.ts";
import { isEdgeRejected } from "../../core/edge.ts";
import { EdgeRejection } from "../../core/errors.ts";
import { type JobUpdate, jobChannel } from "../../core/jobs.ts";
import type { Kernel } from "../../core/kernel.ts";
import type { KeyHolder } from "../../core/revocations.ts";
import { ApiError } from "../../lib/api-error.ts";
import { KERNEL_ERRORS, notFound } from "../../lib/errors.ts";
import type { Caller } from "./context.ts";
import { statusError, toGraphqlError } from "./errors.ts";

/** The final message of every open stream when the server shuts down (a 503, SERVICE_UNAVAILABLE). */
export const SHUTDOWN_MESSAGE = "The server is shutting down. Subscribe again to continue.";

/** An item of a job stream: an update, or the error it ends with. */
export type JobStreamItem = JobUpdate | GraphQLError;

function isJobUpdate(m: unknown): m is JobUpdate {
  const u = m as JobUpdate | null;
  return (
    !!u &&
    typeof u === "object" &&
    typeof u.job_id === "string" &&
    typeof u.state === "string" &&
    typeof u.updated_at === "string"
  );
}

/**
 * Whether `u` is later than `last`. The row we read and the messages we receive race (a message published
 * before our read can arrive after it), and a JobUpdate has no sequence number, so order is judged by what
 * only moves forward: the end of a job, its `updated_at` (to the second), then its progress. At equal
 * time and progress an update that changes anything is taken as newer; an exact repeat is not.
 */
function isNewer(u: JobUpdate, last: JobUpdate): boolean {
  if (last.terminal) return false;
  if (u.terminal) return true;
  if (u.updated_at !== last.updated_at) return u.updated_at > last.updated_at;
  const p = u.progress ?? -1;
  const q = last.progress ?? -1;
  if (p !== q) return p > q;
  return u.state !== last.state || u.message !== last.message || u.error !== last.error;
}

/**
 * A hand-written iterator rather than an async generator: a generator suspended on "wait for the next
 * message" cannot be stopped until a message comes, so a client that goes away from a quiet job would keep
 * its pub/sub listener. Here return() unsubscribes at once, and end() can finish a stream that is waiting.
 */
class JobStream implements AsyncIterableIterator<JobStreamItem>, KeyHolder {
  private readonly queue: JobUpdate[] = [];
  private wake: (() => void) | null = null;
  private last: JobUpdate | null = null;
  /** No more updates are taken: the terminal one came, or the stream was ended. */
  private finished = false;
  /** The consumer has had `done` or left. */
  private closed = false;
  /** The error the stream ends with, and whether the consumer has had it. */
  private final: GraphQLError | null = null;
  private finalSent = false;
  private readonly drained: Promise<void>;
  private markDrained!: () => void;

  constructor(
    readonly partnerId: string,
    /** The refusal a request with this stream's key would now get, or null while the key is good. */
    private readonly refusal: () => Promise<GraphQLError | null>,
    private readonly release: () => Promise<void>,
  ) {
    this.drained = new Promise((resolve) => (this.markDrained = resolve));
  }

  offer(u: JobUpdate): void {
    if (this.finished || (this.last && !isNewer(u, this.last))) return;
    this.last = u;
    this.queue.push(u);
    if (u.terminal) {
      this.finished = true;
      void this.release();
    }
    this.#wake();
  }

  async recheck(): Promise<void> {
    if (this.finished) return;
    const refusal = await this.refusal();
    if (refusal) void this.end(refusal);
  }

  /** Drops what is queued and ends with `error`; a stream already finished is left to finish. */
  end(error: unknown): Promise<void> {
    if (this.closed || this.final || (this.finished && this.queue.length === 0)) return this.drained;
    this.final = error instanceof GraphQLError ? error : toGraphqlError(error, {}, () => {});
    this.finished = true;
    this.queue.length = 0;
    void this.release();
    this.#wake();
    return this.drained;
  }

  async next(): Promise<IteratorResult<JobStreamItem>> {
    for (;;) {
      if (this.final && !this.finalSent) {
        this.finalSent = true;
        return { value: this.final, done: false };
      }
      if (this.closed) return this.#done();
      const u = this.queue.shift();
      if (u) {
        // The backstop: an update is delivered only while its key is still good.
        const refusal = await this.refusal();
        if (refusal) this.end(refusal);
        if (this.final || this.closed) continue; // ended meanwhile: the final error (or nothing) instead
        return { value: u, done: false };
      }
      if (this.finished) return this.#done();
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  async return(): Promise<IteratorResult<JobStreamItem>> {
    this.finished = true;
    this.queue.length = 0;
    this.#wake();
    await this.release();
    return this.#done();
  }

  throw(error?: unknown): Promise<IteratorResult<JobStreamItem>> {
    return this.return().then(() => Promise.reject(error));
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  #wake(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  #done(): IteratorResult<JobStreamItem> {
    this.closed = true;
    this.markDrained();
    return { value: undefined, done: true };
  }
}

/** Authenticates like any operation, then streams the job; a missing or foreign job is the REST 404 text. */
export async function subscribeToJob(
  kernel: Kernel,
  caller: Caller,
  jobId: string,
): Promise<AsyncIterableIterator<JobStreamItem>> {
  if (isEdgeRejected(caller.userAgent)) throw new EdgeRejection();
  const partner = await authenticate(kernel.accounts, caller.authorization);

  // Listen first, read second: an update written between the two is then received, never lost.
  let stream: JobStream | null = null;
  const early: JobUpdate[] = [];
  let released = false;
  let unsubscribe: () => Promise<void> = async () => {};
  let unhold: () => void = () => {};
  const release = async () => {
    if (released) return;
    released = true;
    unhold();
    await unsubscribe().catch((err) => kernel.log.warn(`job ${jobId}: unsubscribe failed`, err));
  };
  unsubscribe = await kernel.pubsub.subscribe(jobChannel(jobId), (message) => {
    if (!isJobUpdate(message) || message.job_id !== jobId) return;
    if (stream) stream.offer(message);
    else early.push(message);
  });

  let current: JobUpdate | null;
  try {
    current = await kernel.jobs.current(jobId, partner.id);
  } catch (error) {
    await release();
    throw error;
  }
  if (!current) {
    await release();
    throw notFound();
  }
  const refusal = async (): Promise<GraphQLError | null> => {
    try {
      const now = await authenticate(kernel.accounts, caller.authorization);
      // The same key can only ever name the partner it was issued to; anything else is not this stream's key.
      return now.id === partner.id
        ? null
        : toGraphqlError(new ApiError(401, KERNEL_ERRORS.invalidApiKey), {}, () => {});
    } catch (error) {
      if (error instanceof ApiError) return toGraphqlError(error, {}, () => {});
      // The database is unreachable, say: that is not a revocation, and the next check will tell.
      kernel.log.warn(`job ${jobId}: could not re-check the subscriber's key`, error);
      return null;
    }
  };
  const s = new JobStream(partner.id, refusal, release);
  s.offer(current);
  for (const u of early) s.offer(u);
  stream = s;
  // Held from here; a revocation that came since authentication is caught by the check on the first update.
  if (!released) unhold = kernel.accounts.revocations.hold(s);
  return s;
}

/**
 * Ends every open subscription of this kernel, over SSE and WebSocket, with `message` as a final error
 * (status 503, code SERVICE_UNAVAILABLE), and resolves once each stream has handed it to its transport (at
 * most a few seconds). For the shutdown path: call it before closing the WebSocket server and the HTTP
 * connections, so clients learn why their stream ended.
 */
export async function endSubscriptions(kernel: Kernel, message: string = SHUTDOWN_MESSAGE): Promise<void> {
  if (kernel.accounts.revocations.size === 0) return;
  await kernel.accounts.revocations.endAll(statusError(503, message));
  // A stream is drained once its transport asked for the end; the transport writes the end (SSE's
  // `complete` event, graphql-ws's `complete` message) on its next turns, before the caller closes sockets.
  await new Promise((resolve) => setTimeout(resolve, 0));
}
