// One run of a pocketsphinx command-line tool: no shell, an argument array, a private directory as cwd, HOME
// and TMPDIR (childEnv: none of the server's secrets), a time-out, the caller's abort, and a cap on what it
// may print. Any of the three stops kills the child at once (SIGKILL: the decoder holds no state worth a
// graceful exit). The tools log to a file we name (-logfn), so stderr only carries what happens before that
// file is open (a bad argument, a missing model); its tail is kept for the error message.
import { spawn } from "node:child_process";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { childEnv } from "mediagate/plugin";

export interface SphinxRunOptions {
  cwd: string;
  timeoutMs: number;
  /** Bytes of stdout beyond which the run is killed and fails (a decoder gone wrong, not a long file). */
  maxOutputBytes: number;
  signal: AbortSignal;
  /** Each complete stdout line as it arrives (progress). */
  onLine?(line: string): void;
  /** The -logfn file (relative to cwd): its last ERROR lines go into a failure's message. */
  logFile?: string;
}

/** The last ERROR lines (or last lines) of a log, reading only its final few kilobytes. */
async function logTail(path: string): Promise<string> {
  let file;
  try {
    file = await open(path, "r");
    const { size } = await file.stat();
    const length = Math.min(size, 4096);
    const buf = Buffer.alloc(length);
    await file.read(buf, 0, length, size - length);
    const lines = buf
      .toString("utf8")
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean);
    const errors = lines.filter((l) => l.startsWith("ERROR") || l.startsWith("FATAL"));
    return (errors.length > 0 ? errors : lines).slice(-3).join(" | ");
  } catch {
    return "";
  } finally {
    await file?.close();
  }
}

export class SphinxRunError extends Error {}

export function runSphinx(program: string, args: readonly string[], opts: SphinxRunOptions): Promise<string> {
  opts.signal.throwIfAborted();
  return new Promise((resolve, reject) => {
    const child = spawn(program, [...args], {
      cwd: opts.cwd,
      env: childEnv({ dir: opts.cwd }),
      stdio: ["ignore", "pipe", "pipe"],
      windowsHide: true,
    });
    const out: Buffer[] = [];
    let outBytes = 0;
    let partial = "";
    let errTail = "";
    let stopped: Error | undefined;
    const stop = (why: Error) => {
      stopped ??= why;
      child.kill("SIGKILL");
    };
    const timer = setTimeout(
      () => stop(new SphinxRunError(`${program} gave no answer within ${opts.timeoutMs} ms`)),
      opts.timeoutMs,
    );
    const onAbort = () =>
      stop(opts.signal.reason instanceof Error ? opts.signal.reason : new Error(String(opts.signal.reason)));
    opts.signal.addEventListener("abort", onAbort, { once: true });
    child.stdout!.on("data", (c: Buffer) => {
      outBytes += c.byteLength;
      if (outBytes > opts.maxOutputBytes)
        return stop(new SphinxRunError(`${program} printed more than ${opts.maxOutputBytes} bytes`));
      out.push(c);
      if (opts.onLine) {
        const lines = (partial + c.toString("utf8")).split("\n");
        partial = lines.pop() ?? "";
        for (const l of lines) opts.onLine(l);
      }
    });
    child.stderr!.on("data", (c: Buffer) => (errTail = (errTail + c.toString("utf8")).slice(-2000)));
    const done = () => {
      clearTimeout(timer);
      opts.signal.removeEventListener("abort", onAbort);
    };
    child.on("error", (e) => {
      done();
      reject(new SphinxRunError(`cannot start ${program}: ${e.message}`, { cause: e }));
    });
    child.on("close", (code, sig) => {
      done();
      if (stopped) return reject(stopped);
      if (code !== 0) {
        const why = sig ? `killed by ${sig}` : `exit code ${code}`;
        const fromLog = opts.logFile ? logTail(join(opts.cwd, opts.logFile)) : Promise.resolve("");
        return void fromLog.then((logged) => {
          const last = logged || errTail.trim().split("\n").slice(-3).join(" | ");
          reject(new SphinxRunError(`${program} failed (${why})${last ? `: ${last}` : ""}`));
        });
      }
      resolve(Buffer.concat(out).toString("utf8"));
    });
  });
}
