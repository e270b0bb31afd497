// One server of the GET /me benchmark, in its own process so the load generator does not share its core:
//   tsx test/bench/servers.ts bare <port>   a bare h3 handler answering the same JSON as GET /me
//   tsx test/bench/servers.ts me <port>     the real app: edge rule, auth (key cache), usage count, rate limit, handler
//   tsx test/bench/servers.ts me-quiet <port>  the real app with ACCESS_LOG=off
//   tsx test/bench/servers.ts me-plain <port>  the same app without the shared HTTP manners (request id header,
//                                              compression, CORS; transports/http-manners.ts), to price them
// Prints "READY <key>" when it listens.
import process from "node:process";
import { H3, serve } from "h3";
import { loadConfig } from "../../core/config.ts";
import { createKernel } from "../../core/kernel.ts";
import { plugins } from "../../plugins/index.ts";
import { serveHttp } from "../../transports/http.ts";
import { memoryBlobStore } from "../../storage/blobs.ts";
import { openDatabase } from "../../storage/db.ts";

const [mode, portText] = process.argv.slice(2);
const port = Number(portText);

const sample = {
  request_id: "req_000000000000000000000000",
  name: "Bench partner",
  api_key_prefix: "svc_partner_abcdefgh",
  pricing_tier: "api_plus10",
  credits_remaining: 1_000_000,
  is_active: true,
  created_at: "2026-11-22 12:00:00",
  last_active: "2026-11-22 12:00:00",
};

if (mode === "bare") {
  const app = new H3();
  app.get("/api/v1/partner/me", () => new Response(JSON.stringify(sample), { headers: { "content-type": "application/json; charset=utf-8" } }));
  await serve(app, { port, hostname: "127.0.0.1", silent: true }).ready();
  console.log("READY svc_partner_unused");
} else {
  // info: the access log line of every request is part of what the manners cost (stderr goes to /dev/null).
  const config = loadConfig({ LOG_LEVEL: "info", ACCESS_LOG: mode === "me-quiet" ? "off" : "on", DATA_DIR: "/tmp/mediagate-bench" });
  const kernel = await createKernel({ config, plugins, database: await openDatabase({}), blobs: memoryBlobStore() });
  await kernel.start();
  const { partner, apiKey } = await kernel.accounts.create({ name: "Bench partner", credits: 1_000_000 });
  // The benchmark measures request cost, not the rate limiter's refusals: lift GET /me's limit for this key.
  await kernel.accounts.update(partner.id, { limits: { rate_limits: { "GET /me": 1_000_000_000 } } });
  await serveHttp(kernel, { adminToken: "bench", port, hostname: "127.0.0.1", manners: mode !== "me-plain" });
  console.log(`READY ${apiKey}`);
}
