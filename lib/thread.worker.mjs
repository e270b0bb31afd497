// The worker side of lib/threads.ts: imports the module a call names (once per thread) and runs the export.
// Plain JavaScript because a worker thread does not inherit the TypeScript loader the process started with
// (`node --import tsx` registers its hooks on the main thread only): TypeScript modules are loaded through
// tsx's API on Node, and directly on Deno, which runs TypeScript itself.
import { parentPort } from "node:worker_threads";

const load = typeof globalThis.Deno !== "undefined" ? (href) => import(href) : await import("tsx/esm/api").then(({ tsImport }) => (href) => tsImport(href, import.meta.url));
const modules = new Map();

function buffers(value, out = [], depth = 0) {
  if (ArrayBuffer.isView(value)) {
    if (value.buffer instanceof ArrayBuffer && !out.includes(value.buffer)) out.push(value.buffer);
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
    parentPort.postMessage({ id, ok: false, message: err instanceof Error ? err.message : String(err), name: err?.name });
  }
});
