// What the two webhook kill tests (kill-in-flight, restart) share: a restart rig whose servers make events at
// once and send them to a receiver on 127.0.0.1 on a retry schedule of the test's own, a partner whose webhook
// URL is that receiver, and the partner's delivery records as a server lists them.
import type { Test } from "uvu";
import * as assert from "uvu/assert";
import type { DatabaseBackend } from "../helpers/backends.ts";
import { api, call, type RestartRig, restartRig } from "../helpers/restart.ts";
import type { ServerProcess } from "../helpers/server.ts";

export type Delivery = { event_id: string; status: string; attempt: number; last_error: string | null };

/** The rig of `t` on `backend`: sandbox answers at once, private URLs allowed, WEBHOOK_RETRY_DELAYS `retryDelays`. */
export function webhookKillRig(t: Test, backend: DatabaseBackend, adminToken: string, retryDelays: string): RestartRig {
  const env = { SANDBOX_LATENCY_MS: "0", ALLOW_PRIVATE_URLS: "1", WEBHOOK_RETRY_DELAYS: retryDelays };
  return restartRig(t, backend, { adminToken, env });
}

/** A partner made on `server` (as `rig.partner`) whose webhook URL is `url`; its key. */
export async function partnerWithWebhook(
  rig: RestartRig,
  server: ServerProcess,
  url: string,
  partner: { name: string; credits: number; limits?: Record<string, unknown> },
): Promise<string> {
  const { key } = await rig.partner(server, partner.name, partner.credits, partner.limits);
  assert.is((await call(server, "POST", api("/webhook"), { key, body: { url } })).status, 200);
  return key;
}

/** The partner's (`key`) delivery records, as `server` lists them. */
export async function deliveriesOf(server: ServerProcess, key: string): Promise<Delivery[]> {
  return (await call(server, "GET", api("/webhook/deliveries"), { key })).body.deliveries;
}
