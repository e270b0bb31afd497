// The worker side of lib/threads.ts: imports the module a call names (once per thread) and runs the export.
// Plain JavaScript because a worker thread does not inherit the TypeScript loader the process started with
// (`node --import tsx` registers its hooks on the main thread only): TypeScript modules are loaded through
// tsx's API on Node, and directly on Deno, which runs TypeScript itself.
import { parentPort } from "node:worker_threads";

const load =
  typeof globalThis.Deno !== "undefined"
    ? (href) => import(href)
    : await import("tsx/esm/api").then(
        ({ tsImport }) =>
          (href) =>
            tsImport(href, import.meta.url),
      );
const modules = new Map();

// The ArrayBuffers to transfer rather than copy: only those a result's view covers whole. A small Node Buffer
// is a slice of a pool the thread's later Buffers are cut from, which Node marks untransferable: Node 20 clones
// it instead, later releases refuse a message whose transfer list names it (DataCloneError). Cloned either way.
function buffers(value, out = [], depth = 0) {
  if (ArrayBuffer.isView(value)) {
    const whole =
      value.buffer instanceof ArrayBuffer && value.byteOffset === 0 && value.byteLength === value.buffer.byteLength;
    if (whole && !out.includes(value.buffer)) out.push(value.buffer);
  } else if (value && typeof value === "object" && depth < 4) {
    for (const v of Object.values(value)) buffers(v, out, depth + 1);
  }
  return out;
}

parentPort.on("message", async ({ id, module, name, args }) => {
  try {
    if (!modules.has(module)) modules.set(module, load(module));
    const fn = (await modules.get(module))[name];
    if (typeof fn !== "function") throw new Error(`${module} exports no function ${name}`);
    const value = await fn(...args);
    parentPort.postMessage({ id, ok: true, value }, buffers(value));
  } catch (err) {
    parentPort.postMessage({
      id,
      ok: false,
      message: err instanceof Error ? err.message : String(err),
      name: err?.name,
    });
  }
});
