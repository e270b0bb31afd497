// One server of the GET /me benchmark, in its own process so the load generator does not share its core:
//   tsx test/bench/servers.ts bare <port>   a bare h3 handler answering the same JSON as GET /me
//   tsx test/bench/servers.ts me <port> <control-port> <plain-port>
//     one kernel served three times: the real app (edge rule, auth with its key cache, usage count, rate limit,
//     handler, and the shared HTTP manners: request id, compression, CORS, metrics, access log;
//     transports/http-conventions.ts) on <port> and again on <control-port>, and the same app without the
//     manners on <plain-port>, to price them within one process
// Prints "READY <key>" when it listens. On the embedded PGlite, or on Postgres at BENCH_DATABASE_URL (an empty
// database of its own: the kernel migrates it and makes its partner there).
import process from "node:process";
import { H3, serve } from "h3";
import { loadConfig } from "../../core/config.ts";
import { createKernel } from "../../core/kernel.ts";
import { plugins } from "../../plugins/index.ts";
import { memoryBlobStore } from "../../storage/blobs.ts";
import { openDatabase } from "../../storage/db.ts";
import { serveHttp } from "../../transports/http.ts";

const [mode, ...portTexts] = process.argv.slice(2);
const [port, controlPort, plainPort] = portTexts.map(Number);

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
  app.get(
    "/api/v1/partner/me",
    () => new Response(JSON.stringify(sample), { headers: { "content-type": "application/json; charset=utf-8" } }),
  );
  await serve(app, { port: port!, hostname: "127.0.0.1", silent: true }).ready();
  console.log("READY svc_partner_unused");
} else {
  // info: the access log line of every request is part of what the manners cost (stderr goes to /dev/null).
  const config = loadConfig({ LOG_LEVEL: "info", ACCESS_LOG: "on", DATA_DIR: "/tmp/mediagate-bench" });
  const kernel = await createKernel({
    config,
    plugins,
    database: await openDatabase({ url: process.env.BENCH_DATABASE_URL || undefined }),
    blobs: memoryBlobStore(),
  });
  await kernel.start();
  const { partner, apiKey } = await kernel.accounts.create({ name: "Bench partner", credits: 1_000_000 });
  // The benchmark measures request cost, not the rate limiter's refusals: lift GET /me's limit for this key.
  await kernel.accounts.update(partner.id, { limits: { rate_limits: { "GET /me": 1_000_000_000 } } });
  // One process for the app with and without the manners: two processes of the same code differed by 5 % over
  // forty rounds (an A/A run: each process's own JIT decisions and memory layout), the size of what the
  // manners cost; within one process that difference is common to both. The second app with the manners is
  // the control: its ratio to the first shows the noise of the measure itself.
  await serveHttp(kernel, { adminToken: "bench", port: port!, hostname: "127.0.0.1" });
  await serveHttp(kernel, { adminToken: "bench", port: controlPort!, hostname: "127.0.0.1" });
  await serveHttp(kernel, { adminToken: "bench", port: plainPort!, hostname: "127.0.0.1", conventions: false });
  console.log(`READY ${apiKey}`);
}
