import { suite } from "uvu";
import * as assert from "uvu/assert";
import { z } from "zod";
import { buildRequest } from "../../cli/admin.ts";
import { loadConfig } from "../../core/config.ts";
import { createKernel } from "../../core/kernel.ts";
import { definePlugin, operation } from "../../core/plugin.ts";
import { BootError, compileRegistry } from "../../core/registry.ts";
import { queuedThen } from "../../lib/job-states.ts";
import { ConfigError, defineConfig, envVar } from "../../lib/plugin-config.ts";
import { sandboxConfig } from "../../lib/sandbox.ts";
import account from "../../plugins/account/index.ts";
import imagesSandbox from "../../plugins/images/sandbox.ts";
import { extractorConfig } from "../../plugins/social/extractor.ts";
import videoSandbox from "../../plugins/video/sandbox.ts";
import { createTestKernel } from "../../testkit/index.ts";

const t = suite("configuration and CLI arguments");

t("defaults follow docs/configuration.md", () => {
  const c = loadConfig({});
  assert.is(c.port, 3000);
  assert.is(c.host, "127.0.0.1");
  assert.ok(c.dataDir.endsWith("/.data"));
  assert.is(c.databaseUrl, undefined);
  assert.is(c.redisUrl, undefined);
  assert.is(c.publicUrl, "http://localhost:3000");
  assert.is(c.role, "all");
  assert.is(c.mediaEngine, "auto");
  assert.is(sandboxConfig.read({}).latencyMs, 2000);
  assert.equal(c.webhookRetryDelays, [60, 300, 1800, 7200, 21600]);
  assert.is(c.allowPrivateUrls, false);
  assert.is(c.logLevel, "info");
});

t("values are read and bad ones stop boot by name", () => {
  const c = loadConfig({
    PORT: "8080",
    PUBLIC_URL: "https://api.example.com/",
    WEBHOOK_RETRY_DELAYS: "1, 2,3",
    ALLOW_PRIVATE_URLS: "1",
    ROLE: "worker",
  });
  assert.is(c.publicUrl, "https://api.example.com");
  assert.equal(c.webhookRetryDelays, [1, 2, 3]);
  assert.is(c.allowPrivateUrls, true);
  assert.is(c.role, "worker");
  assert.throws(
    () => loadConfig({ PORT: "http" }),
    (e: unknown) => e instanceof ConfigError && /PORT/.test((e as Error).message),
  );
  assert.throws(() => loadConfig({ ROLE: "boss" }), /ROLE must be one of all, api, worker/);
  assert.throws(() => loadConfig({ MEDIA_ENGINE: "gpu" }), /MEDIA_ENGINE/);
  assert.throws(() => loadConfig({ WEBHOOK_RETRY_DELAYS: "1,soon" }), /WEBHOOK_RETRY_DELAYS/);
  assert.throws(() => loadConfig({ PUBLIC_URL: "not a url" }), /PUBLIC_URL/);
});

t("a plugin's variables are declared with their defaults and fail by name", () => {
  assert.is(sandboxConfig.read({ SANDBOX_LATENCY_MS: "15" }).latencyMs, 15);
  assert.is(
    sandboxConfig.read({ SANDBOX_LATENCY_MS: "" }).latencyMs,
    2000,
    "empty is unset, as for the kernel's variables",
  );
  assert.throws(
    () => sandboxConfig.read({ SANDBOX_LATENCY_MS: "soon" }),
    (e: unknown) =>
      e instanceof ConfigError &&
      (e as Error).message === 'SANDBOX_LATENCY_MS must be a non-negative integer (got "soon")',
  );
  const social = extractorConfig.read({ SOCIAL_EXTRACTOR: "YT-DLP", SANDBOX_LATENCY_MS: "3" });
  assert.equal({ ...social }, { latencyMs: 3, extractor: "yt-dlp", ytdlpPath: undefined });
  assert.throws(
    () => extractorConfig.read({ SOCIAL_EXTRACTOR: "youtube" }),
    /SOCIAL_EXTRACTOR must be one of sandbox, yt-dlp, auto \(got "youtube"\)/,
  );
  // Typed through the declaration: no type argument, no cast.
  const latency: number = social.latencyMs;
  const extractor: "sandbox" | "yt-dlp" | "auto" = social.extractor;
  const path: string | undefined = social.ytdlpPath;
  // @ts-expect-error not a declared key
  void social.extractorPath;
  void [latency, extractor, path];
  assert.throws(() => envVar("lower_case", z.string(), ""), /uppercase/);
  assert.throws(
    () => defineConfig({ a: envVar("X", z.string(), ""), b: envVar("X", z.string(), "") }),
    /X is declared twice/,
  );
  // `of` reads only what the plugin declared, so a plugin's config stays an honest list.
  assert.throws(
    () => extractorConfig.of({ pluginConfig: { SANDBOX_LATENCY_MS: 0 } }),
    /SOCIAL_EXTRACTOR is read by a plugin that does not declare it/,
  );
});

t("the registry checks declarations: one variable, one declaration, none of the kernel's", () => {
  const registry = compileRegistry([imagesSandbox, videoSandbox]);
  assert.equal(registry.configVariables.get("SANDBOX_LATENCY_MS")?.plugins, ["images-sandbox", "video-sandbox"]);
  const a = definePlugin({
    name: "a",
    config: defineConfig({ greeting: envVar("GREETING", z.string().default("hello"), "") }),
  });
  const b = definePlugin({
    name: "b",
    config: defineConfig({ greeting: envVar("GREETING", z.string().default("hej"), "") }),
  });
  assert.throws(
    () => compileRegistry([a, b]),
    (e: unknown) => e instanceof BootError && /"a" and "b" both declare GREETING/.test((e as Error).message),
  );
  const port = definePlugin({ name: "porty", config: defineConfig({ port: envVar("PORT", z.string(), "") }) });
  assert.throws(() => compileRegistry([port]), /plugin "porty" declares PORT, which the kernel reads itself/);
});

t("the kernel reads plugin variables from the environment its Config came from, before any connection", async () => {
  // A bad value stops createKernel with a ConfigError; it never reaches the database (DATA_DIR is not even made).
  const config = loadConfig({
    DATA_DIR: "/nonexistent/mediagate-config-test",
    LOG_LEVEL: "silent",
    SANDBOX_LATENCY_MS: "soon",
  });
  const err = await createKernel({ config, plugins: [imagesSandbox] }).then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(err instanceof ConfigError && /^SANDBOX_LATENCY_MS must be/.test(err.message), String(err));
  const overridden = await createKernel({ config, env: { SANDBOX_LATENCY_MS: "x" }, plugins: [imagesSandbox] }).then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(overridden instanceof ConfigError && /got "x"/.test(overridden.message), "an explicit env wins");
});

t("handlers, job runners and capability factories read their plugin's variables, typed", async () => {
  const greeter = defineConfig({
    ...sandboxConfig.variables,
    greeting: envVar("TEST_GREETING", z.string().default("hello"), "a test's greeting"),
  });
  const seen: { factory?: string; runner?: string } = {};
  const plugin = definePlugin({
    name: "greeter",
    config: greeter,
    rateLimits: {
      "GET /greeting": [{ limit: 100, windowSeconds: 60 }],
      "POST /greeting": [{ limit: 100, windowSeconds: 60 }],
    },
    provides: {
      "social.extract": (host) => {
        seen.factory = greeter.of(host).greeting;
        return { extract: () => Promise.reject(new Error("not used")) };
      },
    },
    jobs: {
      greet: {
        ...queuedThen("done", "failed"),
        failError: "failed",
        async run(ctx) {
          seen.runner = greeter.of(ctx).greeting.toUpperCase();
          return { state: "done" };
        },
      },
    },
    operations: [
      operation({
        method: "GET",
        path: "/greeting",
        async handle(ctx) {
          const { greeting, latencyMs } = greeter.of(ctx);
          return { greeting: greeting.toUpperCase(), latency_ms: latencyMs + 1, kernel_role: ctx.config.role };
        },
      }),
      operation({
        method: "POST",
        path: "/greeting",
        status: 202,
        async handle(ctx) {
          const job = await ctx.submitJob({ kind: "greet", credits: 0, state: "queued" });
          return { job_id: job.jobId };
        },
      }),
    ],
  });
  const tk = await createTestKernel({
    plugins: [account, plugin],
    env: { TEST_GREETING: "hej", SANDBOX_LATENCY_MS: "6" },
    start: true,
  });
  try {
    const { key } = await tk.partner();
    const res = await tk.request("GET", "/greeting", { key });
    assert.equal(res.body, { request_id: res.body.request_id, greeting: "HEJ", latency_ms: 7, kernel_role: "all" });
    assert.is(seen.factory, "hej");
    assert.is((await tk.request("POST", "/greeting", { key })).status, 202);
    for (let i = 0; i < 200 && !seen.runner; i++) await new Promise((r) => setTimeout(r, 25));
    assert.is(seen.runner, "HEJ");
  } finally {
    await tk.close();
  }
});

t("CLI commands map onto the admin API", () => {
  assert.equal(buildRequest(["partners", "create", "--name", "Acme", "--credits", "5", "--feature", "captions=off"]), {
    method: "POST",
    path: "/partners",
    body: { name: "Acme", credits: 5, pricing_tier: undefined, features: { captions: false } },
  });
  assert.equal(
    buildRequest([
      "partners",
      "update",
      "prt_1",
      "--rate-limit",
      "POST /generate-video=20",
      "--inflight",
      "30",
      "--active",
      "false",
    ]).body,
    {
      name: undefined,
      pricing_tier: undefined,
      is_active: false,
      features: undefined,
      limits: { inflight_jobs: 30, rate_limits: { "POST /generate-video": 20 } },
      custom_rates: undefined,
    },
  );
  assert.equal(buildRequest(["rotate-key", "prt_1"]), { method: "POST", path: "/partners/prt_1/rotate-key" });
  assert.throws(
    () => buildRequest(["credits", "add", "prt_1", "--amount", "ten", "--type", "purchase", "--description", "x"]),
    /--amount takes an integer/,
  );
  assert.throws(() => buildRequest(["partners", "create"]), /missing --name/);
  assert.equal(buildRequest(["pauses", "set", "social_downloads", "on"]), {
    method: "PUT",
    path: "/pauses/social_downloads",
    body: { paused: true },
  });
  assert.equal(buildRequest(["pauses", "list"]), { method: "GET", path: "/pauses" });
  assert.throws(() => buildRequest(["pauses", "set", "social_downloads", "maybe"]), /NAME on\|off/);
});

t.run();
