// A webhook receiver a partner can copy: verifies the signature over the raw body in constant time,
// rejects timestamps more than 300 s away, drops duplicate event ids, and answers 2xx at once.
// Dependency-free (node:http, node:crypto).
//
//   WEBHOOK_SECRET=<secret from GET /webhook> PORT=8787 npx tsx examples/webhook-receiver.ts
//
// Then point POST /webhook at it (a public https URL in production; locally, ALLOW_PRIVATE_URLS=1 lets the
// server call http://127.0.0.1:8787/).
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import process from "node:process";

export const TOLERANCE_SECONDS = 300;

/** The header value a sender puts in X-Service-Signature. */
export function signPayload(rawBody: Uint8Array | string, secret: string, t: number): string {
  const mac = createHmac("sha256", secret).update(`${t}.`).update(rawBody).digest("hex");
  return `t=${t},v1=${mac}`;
}

export function verifySignature(
  rawBody: Uint8Array | string,
  header: string | undefined,
  secret: string,
  nowSeconds = Math.floor(Date.now() / 1000),
): { ok: true; t: number } | { ok: false; reason: string } {
  if (!header) return { ok: false, reason: "missing signature" };
  const m = /^t=(\d{1,12}),v1=([0-9a-f]{64})$/.exec(header.trim());
  if (!m) return { ok: false, reason: "malformed signature" };
  const t = Number(m[1]);
  if (Math.abs(nowSeconds - t) > TOLERANCE_SECONDS) return { ok: false, reason: "timestamp outside the tolerance" };
  const expected = Buffer.from(signPayload(rawBody, secret, t).split("v1=")[1]!, "hex");
  const given = Buffer.from(m[2]!, "hex");
  // Same length by the pattern above; timingSafeEqual so the comparison leaks nothing about the MAC.
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: "signature mismatch" };
  return { ok: true, t };
}

export interface ReceivedEvent {
  id: string;
  event: string;
  created_at: number;
  data: Record<string, unknown>;
}

export interface ReceiverOptions {
  secret: string;
  onEvent(event: ReceivedEvent, headers: IncomingHttpHeaders): void | Promise<void>;
  /** Event ids remembered for duplicate detection (in memory here; use a durable store in production). */
  remember?: number;
}

export function createReceiver(options: ReceiverOptions): Server {
  const seen = new Set<string>();
  const limit = options.remember ?? 10_000;
  return createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const raw = Buffer.concat(chunks); // the exact bytes signed: never re-serialize before verifying
      const check = verifySignature(raw, req.headers["x-service-signature"] as string | undefined, options.secret);
      if (!check.ok) {
        res.writeHead(400, { "content-type": "text/plain" }).end(check.reason);
        return;
      }
      let event: ReceivedEvent;
      try {
        event = JSON.parse(raw.toString("utf8"));
      } catch {
        res.writeHead(400, { "content-type": "text/plain" }).end("body is not JSON");
        return;
      }
      // Retries resend the same id: acknowledge it again, process it once.
      if (seen.has(event.id)) {
        res.writeHead(200).end();
        return;
      }
      seen.add(event.id);
      if (seen.size > limit) seen.delete(seen.values().next().value!);
      res.writeHead(200).end(); // answer first: the sender waits at most 10 s
      try {
        await options.onEvent(event, req.headers);
      } catch (err) {
        console.error("webhook handler failed", err);
      }
    });
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const secret = process.env.WEBHOOK_SECRET;
  if (!secret) {
    console.error("Set WEBHOOK_SECRET to the secret GET /webhook shows.");
    process.exit(1);
  }
  const port = Number(process.env.PORT ?? 8787);
  createReceiver({ secret, onEvent: (e) => console.log(`${e.event} ${e.id}`, JSON.stringify(e.data)) }).listen(port, "127.0.0.1", () =>
    console.log(`webhook receiver on http://127.0.0.1:${port}/`),
  );
}
