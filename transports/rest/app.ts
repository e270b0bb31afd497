// The HTTP application: partner API, admin API, health check. `app.fetch` serves tests without a server;
// `serve()` in main.ts puts the same app on a port under Node or Deno.
import { H3 } from "h3";
import type { Kernel } from "../../core/kernel.ts";
import { KERNEL_ERRORS } from "../../core/errors.ts";
import { mountAdminApi } from "../admin/routes.ts";
import { mountPartnerApi } from "./partner-api.ts";
import { json } from "./respond.ts";

export interface AppOptions {
  adminToken: string;
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
  app.all("/**", () => json(404, { error: KERNEL_ERRORS.notFound }));
  return app;
}
