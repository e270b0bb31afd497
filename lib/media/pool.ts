// One pool per process for CPU-heavy media work (issue 20 item 3): ffmpeg runs, libvips resampling and any
// other render a plugin does take a place in it, whatever job kind they serve, so the work running at once
// never exceeds what the machine has (MEDIA_CONCURRENCY, default the number of cores). Job kinds keep their
// own slot counts, but those bound attempts in flight, not CPU: waits hold no slot (core/upstream-waits.ts)
// and the pool bounds the work. Its occupancy is on /metrics (mediagate_media_pool_*).
import { availableParallelism } from "node:os";
import { Limiter } from "./common.ts";

export interface MediaPoolStats {
  size: number;
  /** Places taken now. */
  active: number;
  /** Work waiting for a place. */
  waiting: number;
}

export interface MediaPool {
  readonly size: number;
  /**
   * Runs `work` in a place of the pool, FIFO; rejects if `signal` aborts while it waits, with `reason()` when
   * given (else a MediaError "aborted").
   */
  run<T>(work: () => Promise<T>, signal?: AbortSignal, reason?: () => Error): Promise<T>;
  stats(): MediaPoolStats;
}

export const defaultMediaConcurrency = () => Math.max(1, availableParallelism());

export function createMediaPool(size = defaultMediaConcurrency()): MediaPool {
  if (!Number.isInteger(size) || size < 1) throw new Error(`a media pool needs at least one place (got ${size})`);
  const limiter = new Limiter(size);
  return {
    size,
    run: (work, signal, reason) => limiter.run(work, signal, reason),
    stats: () => ({ size, active: limiter.activeCount, waiting: limiter.waitingCount }),
  };
}
