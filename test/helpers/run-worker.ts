// One worker of the parallel test runner (test/run.ts forks it with the tsx loader and an IPC channel).
// It runs the files the coordinator hands it, one at a time, with uvu exactly as the serial runner does,
// streams each file's output and sends its result back; told to finish (or sent SIGTERM, or orphaned), it
// runs this process's lifecycle cleanups (its isolated Postgres databases, ...) and exits.
import process from "node:process";
import { onFileError, onFileOutput, onStrayError, runAfterAll, runTestFile } from "./run-file.ts";
import { CLEANUP_LIMIT_S, type FromWorker, type ToWorker } from "./run-protocol.ts";

if (!process.send) {
  console.error("test/helpers/run-worker.ts is started by test/run.ts (it needs an IPC channel)");
  process.exit(2);
}

const root = process.env.TEST_ROOT ?? process.cwd();
let running: string | undefined;
let finishing = false;

function send(msg: FromWorker): Promise<void> {
  return new Promise((resolve) => {
    if (!process.connected) return resolve();
    process.send!(msg, undefined, {}, () => resolve());
  });
}

onFileOutput((text) => {
  if (running) void send({ type: "output", file: running, text });
});
onFileError((text) => {
  if (running) void send({ type: "error", file: running, text });
  else void send({ type: "stray", text });
});
onStrayError((text) => void send({ type: "stray", text }));

async function finish(code: number): Promise<never> {
  if (!finishing) {
    finishing = true;
    const started = performance.now();
    const { output, errors } = await Promise.race([
      runAfterAll(),
      new Promise<{ output: string; errors: string[] }>((r) =>
        setTimeout(
          () => r({ output: "", errors: [`The cleanups did not finish within ${CLEANUP_LIMIT_S} s`] }),
          CLEANUP_LIMIT_S * 1000,
        ).unref(),
      ),
    ]);
    await send({ type: "done", output, errors, ms: performance.now() - started });
    process.exit(code);
  }
  return new Promise<never>(() => {});
}

process.on("message", async (msg: ToWorker) => {
  if (msg.type === "finish") return void (await finish(0));
  if (msg.type !== "run" || finishing) return;
  running = msg.file;
  const result = await runTestFile(msg.file, root);
  running = undefined;
  // output was streamed already
  const { output: _output, ...rest } = result;
  await send({ type: "result", ...rest });
});

// Killed for a timeout (SIGTERM first) or left behind by a coordinator that died: clean up, then go.
process.on("SIGTERM", () => void finish(1));
process.on("SIGINT", () => void finish(1));
process.on("disconnect", () => void finish(1));
