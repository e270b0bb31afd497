// A suite's test kernel and media engine: made before its tests, both closed after them.
import type { Test } from "uvu";
import { createMediaEngine, type MediaEngine } from "../../lib/media/index.ts";
import type { TestKernel } from "../../testkit/index.ts";

/** Before the suite's tests, the kernel `open` makes and a new media engine are handed to `use`. */
export function withKernelAndEngine(
  t: Test,
  open: () => Promise<TestKernel>,
  use: (tk: TestKernel, engine: MediaEngine) => void,
): void {
  let tk: TestKernel | undefined;
  let engine: MediaEngine | undefined;
  t.before(async () => {
    tk = await open();
    engine = createMediaEngine();
    use(tk, engine);
  });
  t.after(async () => {
    await engine?.close();
    await tk?.close();
  });
}
