// Worker thread that runs eSpeak NG (the `espeak-ng` package: the espeak-ng CLI compiled to WebAssembly) for
// espeak.ts.
//
// Why a worker: the CLI's main() runs synchronously while the module instantiates, about 0.3 s per 1,000
// characters; on the main thread that would stall every other request. Why plain JS: worker threads do not
// inherit tsx's loader. Why a fresh instance per text: the CLI is a program, not a library: it runs main()
// once and keeps its globals; instantiating the module compiled once below is cheap and gives a clean run.
//
// Protocol: in  {id, text, voice, pitch, speed, gap, ssml?}   (ssml: the text is SSML, eSpeak's -m)
//           out {id, wav: Uint8Array} | {id, error}

import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { parentPort } from "node:worker_threads";

// eSpeak seeds its noise generator (breathy variants) from the wall clock; a fixed clock in this worker,
// which runs nothing else, makes the same text and voice give the same samples.
Date.now = () => 0;

const jsUrl = import.meta.resolve("espeak-ng");
const { default: createESpeak } = await import(jsUrl);
const compiled = await WebAssembly.compile(await readFile(fileURLToPath(new URL("./espeak-ng.wasm", jsUrl))));

parentPort.on("message", async ({ id, text, voice, pitch, speed, gap, ssml }) => {
  const log = [];
  try {
    const run = await createESpeak({
      // The text goes through a file so nothing in it can be read as a command-line option.
      arguments: [
        "-v",
        voice,
        "-p",
        String(pitch),
        "-s",
        String(speed),
        "-g",
        String(gap),
        ...(ssml ? ["-m"] : []),
        "-w",
        "out.wav",
        "-f",
        "in.txt",
      ],
      preRun: [(m) => m.FS.writeFile("in.txt", text)],
      print: () => {},
      printErr: (line) => log.push(line),
      instantiateWasm(imports, receive) {
        WebAssembly.instantiate(compiled, imports).then((instance) => receive(instance, compiled));
        return {};
      },
    });
    const wav = run.FS.readFile("out.wav");
    parentPort.postMessage({ id, wav }, [wav.buffer]);
  } catch (err) {
    parentPort.postMessage({ id, error: `${err?.message ?? err} ${log.slice(-3).join(" | ")}`.trim() });
  }
});
parentPort.postMessage({ type: "ready" });
