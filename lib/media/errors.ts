// One error type for everything the media engine does, because callers must answer a partner without leaking
// internals (docs/architecture.md invariant 7): `message`/`publicMessage` is a fixed sentence that never names ffmpeg, vips, a
// codec or a path, while `detail` keeps the real cause (exit code, last stderr lines) for logs. `status` is the
// HTTP answer a handler would give: 422 when the input is at fault, 500 when we are.

export type MediaErrorCode =
  /** The input is damaged, truncated or not media of a kind we can read (spec: 422). */
  | "invalid_input"
  /** The input is readable media but uses a format/codec this engine cannot handle (spec: 422). */
  | "unsupported"
  /** The work failed for a reason that is not the input's fault (bad arguments, engine crash). */
  | "failed"
  /** The caller aborted (AbortSignal). */
  | "aborted"
  /** The work ran past its time limit. */
  | "timeout"
  /** The requested engine (native ffmpeg, the wasm core, libvips) could not be found or loaded. */
  | "engine_unavailable";

export const MEDIA_PUBLIC_MESSAGES: Record<MediaErrorCode, string> = {
  invalid_input: "The media could not be processed (damaged or not a valid format).",
  unsupported: "The media could not be processed (unsupported format).",
  failed: "The media could not be processed.",
  aborted: "Media processing was cancelled.",
  timeout: "Media processing took too long.",
  engine_unavailable: "Media processing is not available right now.",
};

const STATUS: Record<MediaErrorCode, number> = {
  invalid_input: 422,
  unsupported: 422,
  failed: 500,
  aborted: 499,
  timeout: 504,
  engine_unavailable: 503,
};

export class MediaError extends Error {
  readonly code: MediaErrorCode;
  /** Internal detail for logs only; never send it to a partner. */
  readonly detail: string;
  /** Suggested HTTP status (422 for input problems). */
  readonly status: number;
  /** Last log lines of the tool, when there was one. Internal, like `detail`. */
  readonly log: readonly string[];

  constructor(code: MediaErrorCode, detail: string, options: { cause?: unknown; log?: readonly string[] } = {}) {
    super(MEDIA_PUBLIC_MESSAGES[code], options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "MediaError";
    this.code = code;
    this.detail = detail;
    this.status = STATUS[code];
    this.log = options.log ?? [];
  }

  /** The sentence a partner may see. Same as `message`; spelled out so call sites read as intended. */
  get publicMessage(): string {
    return this.message;
  }

  /** True when the input (not the service) is at fault: answer 422 and do not retry. */
  get isInputError(): boolean {
    return this.code === "invalid_input" || this.code === "unsupported";
  }

  /** For logs: code, detail and the tail of the tool's output. */
  describe(): string {
    return `MediaError(${this.code}): ${this.detail}${this.log.length ? `\n  ${this.log.join("\n  ")}` : ""}`;
  }
}

export const isMediaError = (e: unknown): e is MediaError => e instanceof MediaError;

// Lines ffmpeg/ffprobe print when the input itself is bad. Anything else (unknown option, missing encoder,
// filter graph errors) is our own fault and stays "failed", so it is not silently reported as the partner's.
const INPUT_PATTERNS: RegExp[] = [
  /Invalid data found when processing input/i,
  /moov atom not found/i,
  /could not find codec parameters/i,
  /does not contain any stream/i,
  /Output file #\d+ does not contain any stream/i,
  /Invalid NAL unit size/i,
  /error reading header/i,
  /Failed to read frame size/i,
  /Truncating packet/i,
  /End of file/i,
  /invalid frame size/i,
  /Header missing/i,
  /no frame!/i,
  /Stream map '[^']*' matches no streams/i,
  /Invalid argument$/i,
];
const UNSUPPORTED_PATTERNS: RegExp[] = [
  /Decoder \(codec [^()]*\) not found/i,
  /Unsupported codec/i,
  /not currently supported/i,
  /unknown codec/i,
];

/** Decide whether a failed ffmpeg/ffprobe run was the input's fault, from its last log lines. */
export function classifyFailure(lines: readonly string[]): "invalid_input" | "unsupported" | "failed" {
  const text = lines.join("\n");
  if (UNSUPPORTED_PATTERNS.some((p) => p.test(text))) return "unsupported";
  if (
    /Unrecognized option|Unknown encoder|No such filter|Error initializing filter|Option not found|Invalid option/i.test(
      text,
    )
  )
    return "failed";
  if (lines.some((l) => INPUT_PATTERNS.some((p) => p.test(l)))) return "invalid_input";
  return "failed";
}

/** Wrap anything thrown inside the engine as a MediaError, keeping MediaErrors as they are. */
export function toMediaError(e: unknown, code: MediaErrorCode = "failed"): MediaError {
  if (e instanceof MediaError) return e;
  const detail = e instanceof Error ? e.message : Array.isArray(e) ? e.join(": ") : String(e);
  return new MediaError(code, detail, { cause: e });
}
