// A stand-in for an OpenAI-compatible chat-completions API on loopback, shared by the text adapter's tests
// and the ad analysis writer's (test/text/text-generate.test.ts, test/analysis/writer-upstream.test.ts):
// every request is recorded and answered by what `reply` says for it at that moment.
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

/** An answer: JSON (a string body is sent as it is), raw bytes, or "hang" (never answered). */
export type StandInReply = { status: number; body?: unknown; raw?: Uint8Array } | "hang";

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: any;
}

/** A chat completion of `content` (its `choices[0]` extended by `extra`), as the API answers one. */
export const chatCompletion = (content: unknown, model: string, extra: Record<string, unknown> = {}) => ({
  id: "chatcmpl-1",
  object: "chat.completion",
  model,
  choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop", ...extra }],
});

export async function chatStandIn(reply: (req: IncomingMessage, body: any) => StandInReply) {
  const seen: SeenRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "null");
      seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      const answer = reply(req, body);
      if (answer === "hang") return;
      res
        .writeHead(answer.status, { "content-type": "application/json" })
        .end(answer.raw ?? (typeof answer.body === "string" ? answer.body : JSON.stringify(answer.body)));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}
