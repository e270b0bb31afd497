// The HTTP application: partner API, admin API, GraphQL, media links, health check. `app.fetch` serves tests without a
// server; `serve()` in main.ts puts the same app on a port under Node or Deno.
import { H3 } from "h3";
import type { Kernel } from "../../core/kernel.ts";
import { KERNEL_ERRORS } from "../../core/errors.ts";
import { mountAdminApi } from "../admin/routes.ts";
import { createGraphql, GRAPHQL_PATH, type GraphqlServer } from "../graphql/yoga.ts";
import { mountMedia } from "./media.ts";
import { mountPartnerApi } from "./partner-api.ts";
import { json } from "./respond.ts";

export interface AppOptions {
  adminToken: string;
  /** The GraphQL server to mount; main.ts passes its own so the WebSocket transport shares it. */
  graphql?: GraphqlServer;
}

export function createApp(kernel: Kernel, options: AppOptions): H3 {
  const app = new H3();
  app.get("/healthz", async () => {
    try {
      await kernel.database.kysely.selectFrom("settings").select("key").limit(1).execute();
      return json(200, { status: "ok" });
    } catch {
      return json(503, { status: "unavailable" });
    }
  });
  mountPartnerApi(app, kernel);
  mountAdminApi(app, kernel, options.adminToken);
  mountMedia(app, kernel.blobs);
  const graphql = options.graphql ?? createGraphql(kernel);
  app.on("GET", GRAPHQL_PATH, (event) => graphql.yoga.fetch(event.req as Request));
  app.on("POST", GRAPHQL_PATH, (event) => graphql.yoga.fetch(event.req as Request));
  app.all("/**", () => json(404, { error: KERNEL_ERRORS.notFound }));
  return app;
}
