// Holding the media engine's encodes in a test: what a request may do while every ffmpeg run waits (probes go
// on). Used by the reference tests of video and Omni: a call that answers while encodes are held did no encode.
import type { TestKernel } from "../../testkit/index.ts";

/** Every ffmpeg run of the kernel's engine (an encode; probes go on) waits until `release` is called. */
export function holdEncodes(tk: TestKernel) {
  const engine = tk.kernel.capability("media");
  const run = engine.run.bind(engine);
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const held: string[][] = [];
  engine.run = async (args, io) => {
    held.push(io.outputs);
    await gate;
    return run(args, io);
  };
  return { held, release: () => (release(), (engine.run = run)) };
}

/**
 * The call's answer, or a failure once `ms` pass without one (the encodes stay held: a call that needs an
 * encode would wait for ever, as it did when the request encoded).
 */
export async function answerWhileHeld<T>(call: Promise<T>, ms = 60_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error("the call waited for a held encode")), ms)),
  );
  try {
    return await Promise.race([call, late]);
  } finally {
    clearTimeout(timer);
  }
}
