// A partner's webhook endpoint standing in for the real one in the kill tests (test/webhooks/restart.test.ts,
// test/webhooks/kill-in-flight.test.ts): it records every request (the event's id, the delivery attempt header
// and the body's bytes) and leaves the answer to the test.
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface Receipt {
  id: string;
  attempt: number;
  body: string;
}

/** `answer` gets each request once it is recorded (`got` already holds it) and answers it when it likes. */
export function webhookReceiver(answer: (receipt: Receipt, res: ServerResponse) => void) {
  const got: Receipt[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const receipt = { id: JSON.parse(body).id, attempt: Number(req.headers["x-service-delivery-attempt"]), body };
      got.push(receipt);
      answer(receipt, res);
    });
  });
  return {
    got,
    /** Starts listening; resolves to the URL to register. */
    listen: () =>
      new Promise<string>((r) =>
        server.listen(0, "127.0.0.1", () => r(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`)),
      ),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
