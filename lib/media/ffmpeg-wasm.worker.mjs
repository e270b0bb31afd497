// Worker thread that runs @ffmpeg/core (ffmpeg.wasm, single-threaded build) for lib/media/wasm.ts.
//
// Why a worker: the core's exec() is synchronous and takes seconds to minutes; on the main thread it would
// freeze the server (requests, queue heartbeats) and make AbortSignal useless. Here the main thread stays free,
// progress lines stream back as they are printed, and aborting means terminating this worker.
// Why plain JS: worker threads do not inherit tsx's loader, and Deno/Node both run .mjs as is.
// Why a fresh instance per job: the core keeps global state between exec() calls (a run can leave the log level
// or option state changed for the next one) and its wasm memory never shrinks; instantiating the compiled module
// again costs ~10 ms and gives every job a clean process, like a native fork/exec.
//
// Inputs: every argument list is checked again here (assertOpenedSafely) before the core sees it.
//
// Protocol: in  {id, program: "ffmpeg"|"ffprobe", args, inputs: {name: Uint8Array}, outputs: [name], fonts?: {name: Uint8Array}}
//           out {id, type: "log", line} | {id, type: "done", ret, outputs, missing} | {id, type: "error", message}

import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { parentPort } from "node:worker_threads";

const coreUrl = import.meta.resolve("@ffmpeg/core");
const wasmUrl = import.meta.resolve("@ffmpeg/core/wasm");

// The ESM build of the core believes it runs in a browser worker: it reads self.location.href at load time.
globalThis.self ??= globalThis;
globalThis.self.location ??= { href: coreUrl };

const { default: createCore } = await import(coreUrl);
const compiled = await WebAssembly.compile(await readFile(fileURLToPath(wasmUrl)));

async function newCore() {
  return createCore({
    // Hand over the module compiled once above instead of letting the core fetch() a file: URL (Node cannot).
    instantiateWasm(imports, receive) {
      WebAssembly.instantiate(compiled, imports).then((instance) => receive(instance));
      return {};
    },
  });
}

const lastValue = (options, name) => {
  let value;
  for (let i = 0; i < options.length - 1; i++) if (options[i] === name) value = options[i + 1];
  return value;
};

/**
 * Second fence behind lib/media/inputs.ts, which sniffs every input and names its demuxer: this core runs only
 * argument lists where each input is a file of this job (or a lavfi source) opened with an explicit demuxer and
 * both whitelists, so a list that skipped the engine's rules cannot make the core probe or follow a manifest.
 */
function assertOpenedSafely(program, args, inputs) {
  const guarded = (options) =>
    lastValue(options, "-f") !== undefined &&
    lastValue(options, "-protocol_whitelist") === "file" &&
    lastValue(options, "-format_whitelist") !== undefined;
  if (program === "ffprobe") {
    if (!guarded(args)) throw new Error("ffprobe input opened without a demuxer and whitelists");
    return;
  }
  let group = 0;
  for (let k = 0; k < args.length; k++) {
    if (args[k] !== "-i") continue;
    const options = args.slice(group, k);
    const target = args[k + 1];
    if (lastValue(options, "-f") !== "lavfi") {
      if (!Object.hasOwn(inputs, target)) throw new Error(`input ${target} is not a file of this job`);
      if (!guarded(options)) throw new Error(`input ${target} opened without a demuxer and whitelists`);
    }
    k++;
    group = k + 1;
  }
}

parentPort.on("message", async (job) => {
  const { id } = job;
  try {
    assertOpenedSafely(job.program, job.args, job.inputs);
    const core = await newCore();
    core.setLogger(({ message }) => {
      // "Aborted()" is how the core's exit() unwinds, not an error.
      if (message === "Aborted()") return;
      parentPort.postMessage({ id, type: "log", line: message });
    });
    for (const [name, bytes] of Object.entries(job.inputs)) core.FS.writeFile(name, bytes);
    if (job.fonts) {
      // libass's fontsdir (types.ts FONTS_DIR): a directory of its own, since libass loads every file in it.
      core.FS.mkdir("fonts");
      for (const [name, bytes] of Object.entries(job.fonts)) core.FS.writeFile(`fonts/${name}`, bytes);
    }
    if (job.program === "ffprobe" && typeof core.ffprobe !== "function") {
      // Cores before 0.12.6 have no ffprobe: report "nothing produced, nothing said"; wasm.ts then parses `ffmpeg -i`.
      parentPort.postMessage({ id, type: "done", ret: -2, outputs: {}, missing: job.outputs });
      return;
    }
    // The core's exec()/ffprobe() wrap the C main(); exit codes land in core.ret (ffprobe does not set it).
    const ret = job.program === "ffprobe" ? core.ffprobe(...job.args) : core.exec(...job.args);
    const outputs = {};
    const missing = [];
    const transfer = [];
    for (const name of job.outputs) {
      try {
        const bytes = core.FS.readFile(name);
        outputs[name] = bytes;
        transfer.push(bytes.buffer);
      } catch {
        missing.push(name);
      }
    }
    parentPort.postMessage({ id, type: "done", ret, outputs, missing }, transfer);
  } catch (e) {
    parentPort.postMessage({ id, type: "error", message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) });
  }
});

parentPort.postMessage({ type: "ready" });
