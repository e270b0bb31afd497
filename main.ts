// The server: `npm start` (Node) or `deno task start` (Deno). Reads the environment and the plugins of
// mediagate.config.ts (config-file.ts; without one, every spec area), boots them with createServer (server.ts),
// serves the HTTP API (REST and GraphQL) unless ROLE=worker, and runs background work unless
// ROLE=api. SIGTERM or SIGINT shuts it down gracefully (see `shutdown` below).
import process from "node:process";
import { loadServerConfig } from "./config-file.ts";
import { retryWhileUnreachable } from "./core/boot-retry.ts";
import { createDemoPartnerIfEmpty } from "./core/bootstrap.ts";
import { loadConfig } from "./core/config.ts";
import { BootError } from "./core/registry.ts";
import { ConfigError } from "./lib/plugin-config.ts";
import { defaultPlugins } from "./plugins/index.ts";
import { createServer } from "./server.ts";

// The whole shutdown, HTTP and queue (whose running jobs get its stopTimeoutMs, 10 s) included, stays within
// this; past it the process exits anyway, as an orchestrator would kill it (Kubernetes waits 30 s).
const SHUTDOWN_LIMIT_MS = 25_000;

// Files this process creates are its user's alone, whoever started it with whatever umask: DATA_DIR, blobs,
// the embedded database and the admin token are also given explicit modes (storage/private-fs.ts), and this
// covers the rest (temporary files of media work). Deno without the permission to change it keeps its own.
try {
  process.umask(0o077);
} catch {
  // not supported here: the explicit modes still hold
}

async function main() {
  const config = loadConfig();
  // The plugins: mediagate.config.ts (or MEDIAGATE_CONFIG) when there is one, else every spec area (config-file.ts).
  const { plugins } = await loadServerConfig({ defaults: defaultPlugins });
  const server = createServer({ config, plugins });
  const { kernel, admin } = await server.ready();
  const log = kernel.log;

  if (admin.created) {
    console.log(
      `\nAdmin token (saved in ${config.dataDir}/admin-token; set ADMIN_TOKEN to choose your own):\n  ${admin.token}\n`,
    );
  }
  const demoKey = await retryWhileUnreachable(log, () => createDemoPartnerIfEmpty(kernel));
  if (demoKey) {
    console.log(`Demo partner created with 10,000 credits. Its API key is shown only this once:\n  ${demoKey}\n`);
  }

  const { url, adminUrl, healthUrl } = await server.listen();
  if (url) {
    // url, not config.port: with PORT=0 the system chooses the port, and this line is how to learn it.
    console.log(
      `mediagate listening on ${url.replace(/\/$/, "")} (public URL ${config.publicUrl}, database ${kernel.database.kind}, role ${config.role}; GraphQL at /graphql)`,
    );
  } else {
    console.log(`mediagate worker running (database ${kernel.database.kind})`);
  }
  if (adminUrl)
    console.log(`mediagate admin API on ${adminUrl.replace(/\/$/, "")}/api/v1/admin (not on the public port)`);
  if (healthUrl) console.log(`mediagate probes on http://${config.host}:${config.healthPort}/healthz and /readyz`);
  else if (config.role === "worker")
    log.info("no HEALTH_PORT: this worker serves no probe (set HEALTH_PORT for /healthz and /readyz)");

  let stopping = false;
  // server.close (server.ts), in order: stop accepting requests and end every open subscription with a final
  // message (transports/http.ts), let open requests finish; then the kernel: running jobs finish within the
  // queue's stop time or are handed back to the queue for the next start (storage/queue.ts), usage is flushed,
  // connections close, the embedded database's lock is released; the probe port goes last. A second signal
  // exits at once.
  const shutdown = async (signal: string) => {
    if (stopping) {
      log.warn(`${signal} again: exiting without finishing the shutdown`);
      process.exit(1);
    }
    stopping = true;
    log.info(`${signal}: shutting down`);
    setTimeout(() => {
      log.error(`shutdown did not finish within ${SHUTDOWN_LIMIT_MS} ms; exiting`);
      process.exit(1);
    }, SHUTDOWN_LIMIT_MS).unref();
    try {
      await server.close();
    } catch (err) {
      log.error("shutdown failed", err);
      process.exit(1);
    }
    log.info("stopped");
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
