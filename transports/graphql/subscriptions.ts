// `jobUpdates`: a job's current state, then its changes until it ends. Updates come from the kernel's
// pub/sub (`jobChannel(id)`, published by the job runtime on every progress and state write), which is Redis
// when REDIS_URL is set, so a subscriber on one instance sees a job that runs on another.
import { authenticate } from "../../core/auth.ts";
import { isEdgeRejected } from "../../core/edge.ts";
import { EdgeRejection, notFound } from "../../core/errors.ts";
import { jobChannel, type JobUpdate } from "../../core/jobs.ts";
import type { Kernel } from "../../core/kernel.ts";
import type { Caller } from "./context.ts";

function isJobUpdate(m: unknown): m is JobUpdate {
  const u = m as JobUpdate | null;
  return !!u && typeof u === "object" && typeof u.job_id === "string" && typeof u.state === "string" && typeof u.updated_at === "string";
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
 * its pub/sub listener. Here return() unsubscribes at once.
 */
class JobStream implements AsyncIterableIterator<JobUpdate> {
  private readonly queue: JobUpdate[] = [];
  private waiting: ((r: IteratorResult<JobUpdate>) => void) | null = null;
  private last: JobUpdate | null = null;
  private ended = false;

  constructor(private readonly release: () => Promise<void>) {}

  offer(u: JobUpdate): void {
    if (this.ended || (this.last && !isNewer(u, this.last))) return;
    this.last = u;
    if (u.terminal) {
      this.ended = true;
      void this.release();
    }
    if (this.waiting) {
      this.waiting({ value: u, done: false });
      this.waiting = null;
    } else this.queue.push(u);
  }

  next(): Promise<IteratorResult<JobUpdate>> {
    const value = this.queue.shift();
    if (value) return Promise.resolve({ value, done: false });
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => (this.waiting = resolve));
  }

  async return(): Promise<IteratorResult<JobUpdate>> {
    this.ended = true;
    this.queue.length = 0;
    this.waiting?.({ value: undefined, done: true });
    this.waiting = null;
    await this.release();
    return { value: undefined, done: true };
  }

  throw(error?: unknown): Promise<IteratorResult<JobUpdate>> {
    return this.return().then(() => Promise.reject(error));
  }

  [Symbol.asyncIterator]() {
    return this;
  }
}

/** Authenticates like any operation, then streams the job; a missing or foreign job is the REST 404 text. */
export async function subscribeToJob(kernel: Kernel, caller: Caller, jobId: string): Promise<AsyncIterableIterator<JobUpdate>> {
  if (isEdgeRejected(caller.userAgent)) throw new EdgeRejection();
  const partner = await authenticate(kernel.accounts, caller.authorization);

  // Listen first, read second: an update written between the two is then received, never lost.
  let stream: JobStream | null = null;
  const early: JobUpdate[] = [];
  let released = false;
  let unsubscribe: () => Promise<void> = async () => {};
  const release = async () => {
    if (released) return;
    released = true;
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
  const s = new JobStream(release);
  s.offer(current);
  for (const u of early) s.offer(u);
  stream = s;
  return s;
}
