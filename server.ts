// The package root (`import { createServer, defaultPlugins } from "mediagate"`): a mediagate server hosting
// any list of plugins, the spec's areas among them or not, from outside this repository. main.ts is its
// first user; docs/server-api.md shows the others.
//
//   const server = createServer({ plugins: [...defaultPlugins, myPlugin] });
//   await server.listen({ port: 8080 });     // the HTTP servers main.ts runs (public, admin apart, probes)
//   const res = await server.fetch(request);  // or the public API in process, no port (Deno.serve, tests)
//   await server.close();
//
// The server boots at once in the background: `fetch`, `listen` and `ready` wait for it, and a plugin that
// fails to boot rejects them with its BootError or ConfigError (one line naming it).

import { retryWhileUnreachable } from "./core/boot-retry.ts";
import { createDemoPartnerIfEmpty, resolveAdminToken } from "./core/bootstrap.ts";
import { type Config, loadConfig } from "./core/config.ts";
import { createKernel, type Kernel } from "./core/kernel.ts";
import { createLogger } from "./core/log.ts";
import type { PluginDeclaration } from "./core/plugin.ts";
import { BootError } from "./core/registry.ts";
import { createHttpApp, type HttpServer, serveAdmin, serveHealth, serveHttp } from "./transports/http.ts";

export type { ServerConfig } from "./config-file.ts";
export { defineServerConfig, loadServerConfig } from "./config-file.ts";
export { BootError } from "./core/registry.ts";
export { ConfigError } from "./lib/plugin-config.ts";
export {
  account,
  analysis,
  captions,
  defaultPlugins,
  images,
  imagesSandbox,
  metadata,
  music,
  musicSandbox,
  omni,
  omniSandbox,
  scriptRunner,
  social,
  socialExtractor,
  text,
  upscale,
  upstreams,
  video,
  videoSandbox,
  voiceover,
  voiceoverSandbox,
  webhooks,
} from "./plugins/index.ts";
export type { Config, Kernel, PluginDeclaration };
export { createDemoPartnerIfEmpty, loadConfig };

export interface ServerOptions {
  /** The plugins this server runs, in order (providers before the plugins requiring them). */
  plugins: readonly PluginDeclaration[];
  /** The kernel's settings; default `loadConfig()`, read from the environment as `npm start` does. */
  config?: Config;
}

export interface ListenOptions {
  /** The public port; default the config's PORT (0: the system chooses, `url` tells which). */
  port?: number;
  /** The public address; default the config's HOST. */
  host?: string;
}

export interface Listening {
  /** `http://<host>:<port>/` of the public API; undefined for ROLE=worker, which serves none. */
  url: string | undefined;
  /** The admin API's own server when ADMIN_PORT / ADMIN_HOST put it apart. */
  adminUrl: string | undefined;
  /** The probes' own server (HEALTH_PORT). */
  healthUrl: string | undefined;
}

export interface Booted {
  kernel: Kernel;
  config: Config;
  /** The admin token (ADMIN_TOKEN, or the one saved in DATA_DIR); `created` when this boot made it. */
  admin: { token: string; created: boolean };
}

export interface Server {
  /** The public API (REST, admin unless served apart, GraphQL over HTTP, media, probes) in process. */
  fetch(request: Request): Promise<Response>;
  /** Starts the HTTP servers the config asks for; a port that cannot be listened on is a BootError naming its variable. */
  listen(options?: ListenOptions): Promise<Listening>;
  /**
   * Shuts down: open requests get `graceMs` (default 5 s) after every subscription is ended with its final
   * message, then the kernel stops (running jobs finish or go back to the queue, usage is flushed, connections close).
   */
  close(graceMs?: number): Promise<void>;
  /** Resolves once booted (kernel created and started); rejects with the boot's error. */
  ready(): Promise<Booted>;
}

/** An open request gets this long to finish before its connection is cut (main.ts's shutdown). */
const SHUTDOWN_GRACE_MS = 5_000;

/** A port that cannot be listened on is a boot error naming its variable, not a stack. */
async function listening<T>(variable: string, port: number, host: string, serve: () => Promise<T>): Promise<T> {
  try {
    return await serve();
  } catch (err) {
    const code = (err as { code?: string }).code;
    throw new BootError(`${variable}: cannot listen on ${host}:${port} (${code ?? (err as Error).message})`);
  }
}

export function createServer(options: ServerOptions): Server {
  const booting = (async (): Promise<Booted> => {
    const config = options.config ?? loadConfig();
    // Before any connection: a token too short to be a secret stops the boot here.
    const admin = resolveAdminToken(config.adminToken, config.dataDir);
    const log = createLogger(config.logLevel);
    const kernel = await retryWhileUnreachable(log, async () => {
      const kernel = await createKernel({ config, plugins: options.plugins, logger: log });
      try {
        await kernel.start();
      } catch (err) {
        await kernel.stop().catch(() => {});
        throw err;
      }
      return kernel;
    });
    if (config.allowPrivateUrls)
      kernel.log.warn(
        "ALLOW_PRIVATE_URLS is on: outbound URLs may reach loopback and private hosts over http. Development only.",
      );
    return { kernel, config, admin };
  })();
  // Whoever awaits the server (fetch, listen, ready) gets the boot's error; none is left unhandled meanwhile.
  booting.catch(() => {});

  let app: ReturnType<typeof createHttpApp> | undefined;
  const servers: {
    public?: HttpServer;
    admin?: { close(): Promise<void> };
    health?: { close(): Promise<void> };
  } = {};
  let closing: Promise<void> | undefined;

  return {
    ready: () => booting,
    async fetch(request) {
      const { kernel, config, admin } = await booting;
      app ??= createHttpApp(kernel, { adminToken: admin.token, admin: config.admin === undefined });
      return await app.fetch(request);
    },
    async listen(opts = {}) {
      const { kernel, config, admin } = await booting;
      const port = opts.port ?? config.port;
      const host = opts.host ?? config.host;
      if (config.role !== "worker") {
        servers.public = await listening("PORT", port, host, () =>
          serveHttp(kernel, { adminToken: admin.token, admin: config.admin === undefined, port, hostname: host }),
        );
      }
      // The admin API apart (ADMIN_PORT / ADMIN_HOST): the public port then answers its paths 404.
      const apart = config.role === "worker" ? undefined : config.admin;
      const adminApart = apart
        ? await listening("ADMIN_PORT", apart.port, apart.host, () =>
            serveAdmin(kernel, { adminToken: admin.token, port: apart.port, hostname: apart.host }),
          )
        : undefined;
      servers.admin = adminApart;
      const healthPort = config.healthPort;
      const health =
        healthPort === undefined
          ? undefined
          : await listening("HEALTH_PORT", healthPort, config.host, () =>
              serveHealth(kernel, { port: healthPort, hostname: config.host }),
            );
      servers.health = health;
      return { url: servers.public?.url, adminUrl: adminApart?.url, healthUrl: health?.url };
    },
    close(graceMs = SHUTDOWN_GRACE_MS) {
      // In order: stop accepting requests and end every open subscription with a final message, let open
      // requests finish; then the kernel; the probe port goes last. A boot that failed has nothing to close.
      closing ??= (async () => {
        const booted = await booting.catch(() => undefined);
        if (!booted) return;
        await servers.public?.close(graceMs);
        await servers.admin?.close();
        await booted.kernel.stop();
        await servers.health?.close();
      })();
      return closing;
    },
  };
}
