// Resources that outlive a single test file (isolated Postgres databases, Redis key prefixes) register a
// cleanup here; the runner calls afterAll() once every suite has finished.
const cleanups: Array<() => Promise<unknown> | unknown> = [];

export function onAfterAll(fn: () => Promise<unknown> | unknown): void {
  cleanups.push(fn);
}

export async function afterAll(): Promise<void> {
  for (const fn of cleanups.splice(0).reverse()) {
    try {
      await fn();
    } catch (err) {
      console.error("cleanup failed:", err);
    }
  }
}
