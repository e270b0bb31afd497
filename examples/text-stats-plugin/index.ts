// A third-party plugin, built only on the public plugin API (`mediagate/plugin`), in the plugin shape of
// docs/plugins.md, and a package of its own (package.json: `mediagate-plugin-text-stats`, mediagate as a peer
// dependency). This file is the declaration (one charged, synchronous operation with its own price, rate
// limit and feature switch); the handler is in operations.ts, the body in input.ts, the texts in errors.ts,
// the price in prices.ts. This server's plugins/index.ts does not list it: a project installs the package
// and names it in its config file (README.md), and text-stats.test.ts beside this file tests it with the
// test kit (`mediagate/testing`), without a server.
import { definePlugin } from "mediagate/plugin";
import { FEATURE, textStatsOperation } from "./operations.ts";
import { TEXT_STATS_COSTS } from "./prices.ts";

export default definePlugin({
  name: "text-stats",
  costs: TEXT_STATS_COSTS,
  features: [FEATURE],
  rateLimits: { "POST /text-stats": [{ limit: 30, windowSeconds: 60 }] },
  operations: [textStatsOperation],
});
