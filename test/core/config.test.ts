import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ConfigError, loadConfig } from "../../core/config.ts";
import { buildRequest } from "../../cli/admin.ts";

const t = suite("configuration and CLI arguments");

t("defaults follow DESIGN.md", () => {
  const c = loadConfig({});
  assert.is(c.port, 3000);
  assert.is(c.host, "127.0.0.1");
  assert.ok(c.dataDir.endsWith("/.data"));
  assert.is(c.databaseUrl, undefined);
  assert.is(c.redisUrl, undefined);
  assert.is(c.publicUrl, "http://localhost:3000");
  assert.is(c.role, "all");
  assert.is(c.mediaEngine, "auto");
  assert.is(c.sandboxLatencyMs, 2000);
  assert.equal(c.webhookRetryDelays, [60, 300, 1800, 7200, 21600]);
  assert.is(c.allowPrivateUrls, false);
  assert.is(c.logLevel, "info");
});

t("values are read and bad ones stop boot by name", () => {
  const c = loadConfig({ PORT: "8080", PUBLIC_URL: "https://api.example.com/", WEBHOOK_RETRY_DELAYS: "1, 2,3", ALLOW_PRIVATE_URLS: "1", ROLE: "worker" });
  assert.is(c.publicUrl, "https://api.example.com");
  assert.equal(c.webhookRetryDelays, [1, 2, 3]);
  assert.is(c.allowPrivateUrls, true);
  assert.is(c.role, "worker");
  assert.throws(() => loadConfig({ PORT: "http" }), (e: unknown) => e instanceof ConfigError && /PORT/.test((e as Error).message));
  assert.throws(() => loadConfig({ ROLE: "boss" }), /ROLE must be one of all, api, worker/);
  assert.throws(() => loadConfig({ MEDIA_ENGINE: "gpu" }), /MEDIA_ENGINE/);
  assert.throws(() => loadConfig({ WEBHOOK_RETRY_DELAYS: "1,soon" }), /WEBHOOK_RETRY_DELAYS/);
  assert.throws(() => loadConfig({ PUBLIC_URL: "not a url" }), /PUBLIC_URL/);
});

t("CLI commands map onto the admin API", () => {
  assert.equal(buildRequest(["partners", "create", "--name", "Acme", "--credits", "5", "--feature", "captions=off"]), {
    method: "POST",
    path: "/partners",
    body: { name: "Acme", credits: 5, pricing_tier: undefined, features: { captions: false } },
  });
  assert.equal(buildRequest(["partners", "update", "prt_1", "--rate-limit", "POST /generate-video=20", "--inflight", "30", "--active", "false"]).body, {
    name: undefined,
    pricing_tier: undefined,
    is_active: false,
    features: undefined,
    limits: { inflight_jobs: 30, rate_limits: { "POST /generate-video": 20 } },
    custom_rates: undefined,
  });
  assert.equal(buildRequest(["rotate-key", "prt_1"]), { method: "POST", path: "/partners/prt_1/rotate-key" });
  assert.throws(() => buildRequest(["credits", "add", "prt_1", "--amount", "ten", "--type", "purchase", "--description", "x"]), /--amount takes an integer/);
  assert.throws(() => buildRequest(["partners", "create"]), /missing --name/);
  assert.equal(buildRequest(["pauses", "set", "social_downloads", "on"]), { method: "PUT", path: "/pauses/social_downloads", body: { paused: true } });
  assert.equal(buildRequest(["pauses", "list"]), { method: "GET", path: "/pauses" });
  assert.throws(() => buildRequest(["pauses", "set", "social_downloads", "maybe"]), /NAME on\|off/);
});

t.run();
