// The server: `npm start` (Node) or `deno task start` (Deno). Reads the environment, boots the kernel with
// every plugin, serves the HTTP API (REST and GraphQL) unless ROLE=worker, and runs background work unless
// ROLE=api. SIGTERM or SIGINT shuts it down gracefully (see `shutdown` below).
import process from "node:process";
import { createDemoPartnerIfEmpty, resolveAdminToken } from "./core/bootstrap.ts";
import { loadConfig } from "./core/config.ts";
import { createKernel } from "./core/kernel.ts";
import { BootError } from "./core/registry.ts";
import { ConfigError } from "./lib/plugin-config.ts";
import { plugins } from "./plugins/index.ts";
import { type HttpServer, serveAdmin, serveHealth, serveHttp } from "./transports/http.ts";

// An open request (an SSE subscription ended with its final message, a slow upload) gets this long to finish
// before its connection is cut.
const SHUTDOWN_GRACE_MS = 5_000;
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

/** A port that cannot be listened on is a boot error naming its variable, not a stack. */
async function listening<T>(variable: string, port: number, host: string, serve: () => Promise<T>): Promise<T> {
  try {
    return await serve();
  } catch (err) {
    const code = (err as { code?: string }).code;
    throw new BootError(`${variable}: cannot listen on ${host}:${port} (${code ?? (err as Error).message})`);
  }
}

async function main() {
  const config = loadConfig();
  // Before any connection: a token too short to be a secret stops the boot here.
  const admin = resolveAdminToken(config.adminToken, config.dataDir);
  const kernel = await createKernel({ config, plugins });
  const log = kernel.log;
  if (config.allowPrivateUrls)
    log.warn(
      "ALLOW_PRIVATE_URLS is on: outbound URLs may reach loopback and private hosts over http. Development only.",
    );

  if (admin.created) {
    console.log(
      `\nAdmin token (saved in ${config.dataDir}/admin-token; set ADMIN_TOKEN to choose your own):\n  ${admin.token}\n`,
    );
  }
  const demoKey = await createDemoPartnerIfEmpty(kernel);
  if (demoKey) {
    console.log(`Demo partner created with 10,000 credits. Its API key is shown only this once:\n  ${demoKey}\n`);
  }

  await kernel.start();

  let server: HttpServer | undefined;
  if (config.role !== "worker") {
    server = await listening("PORT", config.port, config.host, () =>
      serveHttp(kernel, {
        adminToken: admin.token,
        admin: config.admin === undefined,
        port: config.port,
        hostname: config.host,
      }),
    );
    // server.url, not config.port: with PORT=0 the system chooses the port, and this line is how to learn it.
    console.log(
      `mediagate listening on ${server.url.replace(/\/$/, "")} (public URL ${config.publicUrl}, database ${kernel.database.kind}, role ${config.role}; GraphQL at /graphql)`,
    );
  } else {
    console.log(`mediagate worker running (database ${kernel.database.kind})`);
  }
  // The admin API apart (ADMIN_PORT / ADMIN_HOST): the public port then answers its paths 404.
  const adminApart =
    config.role === "worker" || config.admin === undefined
      ? undefined
      : await listening("ADMIN_PORT", config.admin.port, config.admin.host, () =>
          serveAdmin(kernel, { adminToken: admin.token, port: config.admin!.port, hostname: config.admin!.host }),
        );
  if (adminApart)
    console.log(`mediagate admin API on ${adminApart.url.replace(/\/$/, "")}/api/v1/admin (not on the public port)`);
  const health =
    config.healthPort === undefined
      ? undefined
      : await listening("HEALTH_PORT", config.healthPort, config.host, () =>
          serveHealth(kernel, { port: config.healthPort!, hostname: config.host }),
        );
  if (health) console.log(`mediagate probes on http://${config.host}:${config.healthPort}/healthz and /readyz`);
  else if (config.role === "worker")
    log.info("no HEALTH_PORT: this worker serves no probe (set HEALTH_PORT for /healthz and /readyz)");

  let stopping = false;
  // In order: stop accepting requests and end every open subscription with a final message (transports/
  // http.ts), let open requests finish; then the kernel: running jobs finish within the queue's stop time
  // or are handed back to the queue for the next start (storage/queue.ts), usage is flushed, connections
  // close, the embedded database's lock is released; the probe port goes last. A second signal exits at once.
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
      await server?.close(SHUTDOWN_GRACE_MS);
      await adminApart?.close();
      await kernel.stop();
      await health?.close();
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
