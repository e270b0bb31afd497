// Webhook management (spec part 1 "Webhook management", "Webhook settings and delivery records"): the
// declaration. A small plugin: events are made by the kernel (core/webhooks.ts), so it has no jobs, prices or
// tables of its own; its handlers are in operations.ts, its texts in errors.ts.
import { definePlugin } from "mediagate/plugin";
import { deliveries, getSettings, resend, setSettings, testSend } from "./operations.ts";

export default definePlugin({
  name: "webhooks",
  requires: ["outbound"],
  rateLimits: { "POST /webhook/deliveries/<event_id>/resend": [{ limit: 10, windowSeconds: 60 }] },
  operations: [getSettings, setSettings, testSend, deliveries, resend],
});
