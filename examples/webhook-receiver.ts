// A webhook receiver a partner can copy. Dependency-free: node:http and node:crypto only.
//
// What it does with each POST:
//   1. reads the raw body bytes (the signature covers those exact bytes: never parse and re-serialize the
//      JSON before verifying);
//   2. parses X-Service-Signature (`t=<unix_seconds>,v1=<hex>`) and recomputes v1 as the lowercase hex
//      HMAC-SHA256, keyed with the webhook secret, over `<t>.<raw body>`; compares in constant time;
//   3. refuses a timestamp more than 300 s old (or more than 300 s in the future) with 400, so a captured
//      request cannot be replayed later;
//   4. acknowledges an event id it has already processed with 200 without processing it again (deliveries
//      are retried with the same id and the same body);
//   5. answers 200 at once and processes the event afterwards (the sender waits at most 10 s for a 2xx;
//      anything else is retried).
//
// Run it:
//
//   WEBHOOK_SECRET=<secret from GET /webhook> PORT=8787 npx tsx examples/webhook-receiver.ts
//
// then point POST /webhook (or a job's callback_url) at it: a public https URL in production (behind a TLS
// proxy); locally, ALLOW_PRIVATE_URLS=1 on the server lets it call http://127.0.0.1:8787/. HOST sets the
// listening address (default 127.0.0.1).
//
// Or use the pieces: verifySignature() in your own framework (give it the raw body), signPayload() to sign
// test requests, createReceiver() for a ready node:http server.
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import process from "node:process";
import { pathToFileURL } from "node:url";

/** Largest accepted distance, in seconds, between the signature's timestamp and the receiver's clock. */
export const TOLERANCE_SECONDS = 300;
/** Events are small JSON envelopes; anything larger is refused before it is buffered. */
export const MAX_BODY_BYTES = 1024 * 1024;

function hmacHex(rawBody: Uint8Array | string, secret: string, t: number): string {
  // Strings are hashed as UTF-8, which is what goes on the wire.
  return createHmac("sha256", secret).update(`${t}.`).update(rawBody).digest("hex");
}

/** The X-Service-Signature value for a body: what a sender sends, and what tests use to sign requests. */
export function signPayload(rawBody: Uint8Array | string, secret: string, t: number): string {
  return `t=${t},v1=${hmacHex(rawBody, secret, t)}`;
}

export type VerifyResult = { ok: true; t: number } | { ok: false; reason: string };

/**
 * Checks an X-Service-Signature header against the raw body. `nowSeconds` defaults to the clock (Unix
 * seconds); pass it to test. Several v1 values are allowed (one matching is enough), which keeps a receiver
 * working while a secret is being rotated by a sender that signs with both.
 */
export function verifySignature(
  rawBody: Uint8Array | string,
  header: string | undefined,
  secret: string,
  nowSeconds: number = Math.floor(Date.now() / 1000),
): VerifyResult {
  if (header === undefined || header.trim() === "") return { ok: false, reason: "missing signature" };
  let t: number | undefined;
  const candidates: string[] = [];
  for (const part of header.split(",")) {
    const eq = part.indexOf("=");
    if (eq < 0) return { ok: false, reason: "malformed signature" };
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === "t") {
      if (t !== undefined || !/^\d{1,12}$/.test(value)) return { ok: false, reason: "malformed signature" };
      t = Number(value);
    } else if (key === "v1") {
      if (!/^[0-9a-fA-F]{64}$/.test(value)) return { ok: false, reason: "malformed signature" };
      candidates.push(value.toLowerCase());
    }
    // Other keys (a future v2, say) are ignored.
  }
  if (t === undefined || candidates.length === 0) return { ok: false, reason: "malformed signature" };
  if (nowSeconds - t > TOLERANCE_SECONDS) return { ok: false, reason: "timestamp too old" };
  if (t - nowSeconds > TOLERANCE_SECONDS) return { ok: false, reason: "timestamp in the future" };

  const expected = Buffer.from(hmacHex(rawBody, secret, t), "hex");
  let match = false;
  for (const candidate of candidates) {
    const given = Buffer.from(candidate, "hex");
    // timingSafeEqual throws on different lengths, so check first (the length is not secret).
    // No early exit: every candidate is compared.
    if (given.length === expected.length && timingSafeEqual(given, expected)) match = true;
  }
  return match ? { ok: true, t } : { ok: false, reason: "signature mismatch" };
}

/** The event envelope: `data` holds the job's status fields for video and Omni events. */
export interface ReceivedEvent {
  id: string;
  event: string;
  created_at: number;
  data: Record<string, unknown>;
}

export interface ReceiverOptions {
  secret: string;
  /** Called once per event id, after the 200 has been sent; errors are logged, not retried. */
  onEvent(event: ReceivedEvent, headers: IncomingHttpHeaders): void | Promise<void>;
  /** How many event ids to remember for duplicate detection (default 10,000; oldest forgotten first). */
  remember?: number;
  /** Clock in Unix seconds (tests). */
  now?: () => number;
}

export function createReceiver(options: ReceiverOptions): Server {
  // Duplicate detection in memory, bounded, lost on restart and not shared between instances. In production
  // keep processed ids in a durable store (a unique key in your database, say) for longer than the retry
  // window (about 9 hours), and record the event there before acknowledging it.
  const seen = new Set<string>();
  const limit = Math.max(1, options.remember ?? 10_000);
  const now = options.now ?? (() => Math.floor(Date.now() / 1000));

  const reply = (res: ServerResponse, status: number, text: string) => {
    if (!res.headersSent) res.writeHead(status, { "content-type": "text/plain; charset=utf-8" });
    res.end(text);
  };

  return createServer((req, res) => {
    if (req.method !== "POST") {
      res.setHeader("allow", "POST");
      reply(res, 405, "method not allowed");
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on("error", () => res.destroy());
    req.on("data", (chunk: Buffer) => {
      if (tooLarge) return;
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        tooLarge = true;
        chunks.length = 0;
        res.setHeader("connection", "close");
        reply(res, 413, "body too large");
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => {
      if (tooLarge) return;
      const raw = Buffer.concat(chunks); // the exact bytes that were signed
      const header = req.headers["x-service-signature"];
      const check = verifySignature(raw, Array.isArray(header) ? header.join(",") : header, options.secret, now());
      if (!check.ok) return reply(res, 400, check.reason);

      // Only now, with the body authenticated, parse it. Take the id from the signed body, not from the
      // X-Service-Event-Id header (headers are not covered by the signature).
      let event: ReceivedEvent;
      try {
        event = JSON.parse(raw.toString("utf8"));
      } catch {
        return reply(res, 400, "body is not JSON");
      }
      if (
        typeof event !== "object" ||
        event === null ||
        typeof event.id !== "string" ||
        typeof event.event !== "string"
      ) {
        return reply(res, 400, "not an event envelope");
      }

      // A retry of an event already processed: acknowledge it again, process it once.
      if (seen.has(event.id)) return reply(res, 200, "duplicate");
      seen.add(event.id);
      if (seen.size > limit) seen.delete(seen.values().next().value!);

      reply(res, 200, "ok"); // answer first: the sender waits at most 10 s
      Promise.resolve()
        .then(() => options.onEvent(event, req.headers))
        .catch((err) => console.error(`webhook handler failed for ${event.id}:`, err));
    });
  });
}

// Run directly: `npx tsx examples/webhook-receiver.ts`.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const secret = process.env.WEBHOOK_SECRET;
  if (!secret) {
    console.error("Set WEBHOOK_SECRET to the secret GET /webhook shows.");
    process.exit(1);
  }
  const port = Number(process.env.PORT ?? 8787);
  const host = process.env.HOST ?? "127.0.0.1";
  const server = createReceiver({
    secret,
    onEvent: (e, headers) =>
      console.log(
        `${new Date().toISOString()} ${e.event} ${e.id} attempt=${headers["x-service-delivery-attempt"] ?? "?"}`,
        JSON.stringify(e.data),
      ),
  });
  server.listen(port, host, () => console.log(`webhook receiver on http://${host}:${port}/`));
  const stop = () => server.close(() => process.exit(0));
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}
