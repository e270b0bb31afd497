// A local stand-in for an OpenAI-compatible transcription API (POST /v1/audio/transcriptions), answering as
// the real one does: multipart in (file, model, response_format, timestamp_granularities[], language),
// verbose_json out with `words: [{ word, start, end }]`, and OpenAI's error bodies. A test sets how it
// answers (`mode`) and reads what it was sent (`requests`).
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type StandInMode =
  /** 200 verbose_json with word times from `words` (default: one word a second). */
  | "ok"
  /** 200 verbose_json with segments only (a server that ignores timestamp_granularities). */
  | "segments"
  /** 200 verbose_json with text but no words or segments. */
  | "text-only"
  /** 401 with OpenAI's body, which echoes the key it was given. */
  | "401"
  /** 500 with an error message that (wrongly) repeats the key. */
  | "500"
  /** 200 with a body that is not JSON. */
  | "malformed"
  /** Headers never sent: the client's deadline must end it. */
  | "hang"
  /** A body larger than any transcription (the client's cap must end it). */
  | "huge";

export interface StandInRequest {
  path: string;
  authorization: string | undefined;
  contentType: string | undefined;
  fields: Record<string, string>;
  file: { name: string; type: string; bytes: Uint8Array } | null;
  /** Seconds of audio in the file (from its WAV header: 16 kHz mono s16 expected). */
  seconds: number;
}

export interface StandInWord {
  word: string;
  start: number;
  end: number;
  probability?: number;
}

export interface StandIn {
  /** Base URL (http://127.0.0.1:<port>), what CAPTIONS_TRANSCRIBE_URL would be set to. */
  url: string;
  mode: StandInMode;
  /** The key it expects (when set, any other Authorization is answered 401). */
  key: string | undefined;
  /** The words of a successful answer, per request (`seconds`: the file's length). */
  words: (seconds: number, index: number) => StandInWord[];
  requests: StandInRequest[];
  close(): Promise<void>;
}

function wavSeconds(bytes: Uint8Array): number {
  if (bytes.byteLength < 44) return 0;
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const rate = v.getUint32(24, true);
  const channels = v.getUint16(22, true);
  const bits = v.getUint16(34, true);
  return rate && channels && bits ? v.getUint32(40, true) / (rate * channels * (bits / 8)) : 0;
}

function json(res: ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

const openAiError = (message: string, type: string, code: string | null) => ({
  error: { message, type, param: null, code },
});

export async function startOpenAiStandIn(options: { key?: string; mode?: StandInMode } = {}): Promise<StandIn> {
  const sockets = new Set<import("node:net").Socket>();
  const standIn: StandIn = {
    url: "",
    mode: options.mode ?? "ok",
    key: options.key,
    words: (seconds) =>
      Array.from({ length: Math.floor(seconds) }, (_, i) => ({ word: ` word${i}`, start: i + 0.1, end: i + 0.6 })),
    requests: [],
    close: async () => {},
  };

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    if (req.method !== "POST" || req.url !== "/v1/audio/transcriptions")
      return json(res, 404, openAiError(`Invalid URL (${req.method} ${req.url})`, "invalid_request_error", null));
    const record: StandInRequest = {
      path: req.url,
      authorization: req.headers.authorization,
      contentType: req.headers["content-type"],
      fields: {},
      file: null,
      seconds: 0,
    };
    try {
      const form = await new Request("http://stand-in/", {
        method: "POST",
        headers: { "content-type": req.headers["content-type"] ?? "" },
        body,
      }).formData();
      for (const [name, value] of form) {
        if (typeof value === "string") record.fields[name] = value;
        else record.file = { name: value.name, type: value.type, bytes: new Uint8Array(await value.arrayBuffer()) };
      }
    } catch {
      return json(res, 400, openAiError("Could not parse multipart form", "invalid_request_error", null));
    }
    record.seconds = record.file ? wavSeconds(record.file.bytes) : 0;
    standIn.requests.push(record);
    const index = standIn.requests.length - 1;
    const given = (record.authorization ?? "").replace(/^Bearer /, "");
    if (standIn.mode === "401" || (standIn.key !== undefined && given !== standIn.key)) {
      // OpenAI's own text, which repeats the key it was given (masked there; whole here, to be harsh).
      return json(
        res,
        401,
        openAiError(
          `Incorrect API key provided: ${given}. You can find your API key at https://platform.openai.com/account/api-keys.`,
          "invalid_request_error",
          "invalid_api_key",
        ),
      );
    }
    if (!record.file || !record.fields.model)
      return json(res, 400, openAiError("you must provide a model parameter", "invalid_request_error", null));
    switch (standIn.mode) {
      case "500":
        return json(
          res,
          500,
          openAiError(
            `The server had an error while processing your request (key ${given}). Sorry about that!`,
            "server_error",
            null,
          ),
        );
      case "malformed":
        res.writeHead(200, { "content-type": "application/json" });
        return res.end('{"task":"transcribe","words":[{"word":"hel');
      case "hang":
        return; // never answers; the socket is destroyed on close
      case "huge": {
        res.writeHead(200, { "content-type": "application/json" });
        const block = Buffer.alloc(1024 * 1024, 0x20);
        for (let i = 0; i < 12 && !res.destroyed; i++) {
          if (!res.write(block)) await new Promise((r) => res.once("drain", r));
        }
        return res.end("{}");
      }
    }
    const words = standIn.words(record.seconds, index);
    const text = words.map((w) => w.word.trim()).join(" ");
    const base = { task: "transcribe", language: "english", duration: record.seconds, text };
    if (standIn.mode === "text-only") return json(res, 200, base);
    const segments = words.length
      ? [
          {
            id: 0,
            seek: 0,
            start: words[0]!.start,
            end: words.at(-1)!.end,
            text: ` ${text}`,
            tokens: [1, 2, 3],
            temperature: 0,
            avg_logprob: -0.2,
            compression_ratio: 1.1,
            no_speech_prob: 0.01,
          },
        ]
      : [];
    if (standIn.mode === "segments") return json(res, 200, { ...base, segments });
    const granular = record.fields["timestamp_granularities[]"] === "word";
    return json(res, 200, { ...base, ...(granular ? { words } : {}), segments });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  standIn.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  standIn.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return standIn;
}
