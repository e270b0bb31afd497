// A suite's one test kernel on a database backend: made before its tests (on an isolated Postgres database
// when the backend is Postgres, else on PGlite) and closed after them.
import type { Test } from "uvu";
import { createTestKernel, type TestKernel, type TestKernelOptions } from "../../testkit/index.ts";
import { type DatabaseBackend, isolatedPostgresDatabase } from "./backends.ts";

/**
 * The suite's kernel: made with `options` before the suite's tests and closed after them. What is returned
 * stands for that kernel (read it inside the tests and hooks, not while the suite is being declared).
 */
export function suiteKernel(t: Test, backend: DatabaseBackend, options: Omit<TestKernelOptions, "databaseUrl">) {
  return kernelFor(backend, options, t.before, t.after);
}

/** As suiteKernel, but a kernel of its own for each test: made before it, closed after it. */
export function testKernel(t: Test, backend: DatabaseBackend, options: Omit<TestKernelOptions, "databaseUrl">) {
  return kernelFor(backend, options, t.before.each, t.after.each);
}

function kernelFor(
  backend: DatabaseBackend,
  options: Omit<TestKernelOptions, "databaseUrl">,
  before: (fn: () => Promise<void>) => void,
  after: (fn: () => Promise<void>) => void,
): TestKernel {
  let tk: TestKernel | undefined;
  before(async () => {
    const databaseUrl = backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined;
    tk = await createTestKernel({ ...options, databaseUrl });
  });
  after(async () => {
    await tk?.close();
  });
  const current = (): TestKernel => {
    if (!tk) throw new Error("the kernel is made in the suite's `before`: read it inside a test");
    return tk;
  };
  return new Proxy({} as TestKernel, {
    get(_, name) {
      const value = Reflect.get(current(), name);
      return typeof value === "function" ? value.bind(current()) : value;
    },
  });
}
