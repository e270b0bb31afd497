// The server: `npm start` (Node) or `deno task start` (Deno). Reads the environment, boots the kernel with
// every plugin, serves the HTTP API (REST and GraphQL) unless ROLE=worker, and runs background work unless
// ROLE=api.
import process from "node:process";
import { createDemoPartnerIfEmpty, resolveAdminToken } from "./core/bootstrap.ts";
import { ConfigError, loadConfig } from "./core/config.ts";
import { createKernel } from "./core/kernel.ts";
import { BootError } from "./core/registry.ts";
import { plugins } from "./plugins/index.ts";
import { serveHttp, type HttpServer } from "./transports/http.ts";

// An open SSE subscription never ends by itself; past this, shutdown closes the connections still open.
const SHUTDOWN_GRACE_MS = 5_000;

async function main() {
  const config = loadConfig();
  const kernel = await createKernel({ config, plugins });
  const log = kernel.log;
  if (config.allowPrivateUrls) log.warn("ALLOW_PRIVATE_URLS is on: outbound URLs may reach loopback and private hosts over http. Development only.");

  const admin = resolveAdminToken(config.adminToken, config.dataDir);
  if (admin.created) {
    console.log(`\nAdmin token (saved in ${config.dataDir}/admin-token; set ADMIN_TOKEN to choose your own):\n  ${admin.token}\n`);
  }
  const demoKey = await createDemoPartnerIfEmpty(kernel);
  if (demoKey) {
    console.log(`Demo partner created with 10,000 credits. Its API key is shown only this once:\n  ${demoKey}\n`);
  }

  await kernel.start();

  let server: HttpServer | undefined;
  if (config.role !== "worker") {
    server = await serveHttp(kernel, { adminToken: admin.token, port: config.port, hostname: config.host });
    console.log(`mediagate listening on http://${config.host}:${config.port} (public URL ${config.publicUrl}, database ${kernel.database.kind}, role ${config.role}; GraphQL at /graphql)`);
  } else {
    console.log(`mediagate worker running (database ${kernel.database.kind})`);
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal}: shutting down`);
    await server?.close(SHUTDOWN_GRACE_MS);
    await kernel.stop();
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
}

main().catch((err) => {
  if (err instanceof ConfigError || err instanceof BootError) {
    console.error(`mediagate cannot start: ${err.message}`);
  } else {
    console.error("mediagate failed to start:", err);
  }
  process.exit(1);
});
