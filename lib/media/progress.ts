// Progress is read the same way on both engines so that callers see the same fractions: both runs get
// `-progress pipe:1` (machine-readable `out_time_us=` lines on stdout) and the total comes from the "Duration:"
// lines ffmpeg prints for its inputs, capped by a `-t` in the arguments. ffmpeg itself has no notion of a fraction.

/** Parse an ffmpeg time ("12", "12.5", "00:01:02.5", "1:02") into seconds; undefined when it is not one. */
export function parseFfmpegTime(value: string): number | undefined {
  const v = value.trim();
  if (/^-?\d+(\.\d+)?$/.test(v)) return Number(v);
  const m = /^(?:(\d+):)?(\d{1,2}):(\d{1,2}(?:\.\d+)?)$/.exec(v);
  if (!m) return undefined;
  return Number(m[1] ?? 0) * 3600 + Number(m[2]) * 60 + Number(m[3]);
}

/** The smallest `-t` duration in an argument list (input or output option), if any. */
export function durationLimitFromArgs(args: readonly string[]): number | undefined {
  let limit: number | undefined;
  for (let i = 0; i < args.length - 1; i++) {
    if (args[i] !== "-t") continue;
    const t = parseFfmpegTime(args[i + 1]!);
    if (t !== undefined && t > 0) limit = limit === undefined ? t : Math.min(limit, t);
  }
  return limit;
}

export class ProgressTracker {
  private inputDuration: number | undefined;
  private readonly limit: number | undefined;
  private last = -1;

  constructor(
    args: readonly string[],
    private readonly onProgress: ((fraction: number) => void) | undefined,
    private readonly knownTotal?: number,
  ) {
    this.limit = durationLimitFromArgs(args);
  }

  /** Total seconds of output expected, when it can be known. */
  get total(): number | undefined {
    if (this.knownTotal && this.knownTotal > 0) return this.knownTotal;
    if (this.inputDuration !== undefined && this.limit !== undefined) return Math.min(this.inputDuration, this.limit);
    return this.inputDuration ?? this.limit;
  }

  /** Feed one log line (stderr or progress stdout, either engine). */
  line(line: string): void {
    const d = /^\s*Duration: (\d+:\d+:\d+(?:\.\d+)?)/.exec(line);
    if (d) {
      const s = parseFfmpegTime(d[1]!);
      if (s !== undefined && s > 0) this.inputDuration = Math.max(this.inputDuration ?? 0, s);
      return;
    }
    const t = /^out_time_us=(\d+)/.exec(line);
    if (t) this.time(Number(t[1]) / 1e6);
  }

  /** Report output time in seconds. */
  time(seconds: number): void {
    const total = this.total;
    if (!total || !Number.isFinite(seconds) || seconds < 0) return;
    this.emit(Math.min(0.999, seconds / total));
  }

  /** The run succeeded. */
  done(): void {
    this.emit(1);
  }

  private emit(fraction: number): void {
    // Only forward increases, rounded to 0.1 %, so callers can store each value without thinning it out.
    const f = Math.round(fraction * 1000) / 1000;
    if (f <= this.last) return;
    this.last = f;
    try {
      this.onProgress?.(f);
    } catch {
      // A failing progress callback must not fail the media work.
    }
  }
}
