// Long walks share the event loop: `pace()` is awaited once per item and lets other work in (a setImmediate
// turn: timers, sockets, /healthz) after every FORMAT_LIMITS.sliceMs of work. Checking the clock costs
// little, so it is read only every few items.
import { setImmediate as nextTurn } from "node:timers/promises";
import { FORMAT_LIMITS } from "./limits.ts";

const CHECK_EVERY = 64;

/** A function to await between items of one walk; it resolves at once until a slice of work is used up. */
export function pacer(sliceMs: number = FORMAT_LIMITS.sliceMs): () => Promise<void> | undefined {
  let since = performance.now();
  let n = 0;
  return () => {
    if (++n % CHECK_EVERY !== 0 || performance.now() - since < sliceMs) return undefined;
    return nextTurn().then(() => {
      since = performance.now();
    });
  };
}

/** The items of a (synchronous) walk, with a turn of the event loop after every slice of work. */
export async function* paced<T>(items: Iterable<T>, sliceMs?: number): AsyncGenerator<T> {
  const pace = pacer(sliceMs);
  for (const item of items) {
    yield item;
    const turn = pace();
    if (turn) await turn;
  }
}
