// The admin door (issue 45): wrong admin tokens counted per client address, 429 in the spec's shape with
// Retry-After past ADMIN_AUTH_FAILURES a minute (logged at warn), the right token always let in, /metrics
// behind the same door; the admin API on a port of its own (ADMIN_PORT / ADMIN_HOST) with the public port
// answering its paths 404; and the strength rule of ADMIN_TOKEN (core/token-strength.ts).
import { randomBytes } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { loadConfig } from "../../core/config.ts";
import { estimateBits, MIN_ADMIN_TOKEN_BITS, weakTokenReason } from "../../core/token-strength.ts";
import { ConfigError } from "../../lib/plugin-config.ts";
import account from "../../plugins/account/index.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { ADMIN_AUTH_FAILURES, ADMIN_DOOR_ERRORS } from "../../transports/admin/door.ts";
import { createHttpApp, serveAdmin, serveHttp } from "../../transports/http.ts";

const t = suite("admin door");
let tk: TestKernel;
let app: ReturnType<typeof createHttpApp>;
const warnings: unknown[][] = [];
t.before(async () => {
  tk = await createTestKernel({ plugins: [account] });
  const warn = tk.kernel.log.warn.bind(tk.kernel.log);
  tk.kernel.log.warn = (...args: unknown[]) => {
    warnings.push(args);
    warn(args[0] as string, ...args.slice(1));
  };
  app = createHttpApp(tk.kernel, { adminToken: tk.adminToken });
});
t.after(async () => {
  await tk.close();
});

/** A request as srvx hands it over from a socket: with the client's address. */
const from = (ip: string, path: string, token: string) =>
  app.fetch(
    Object.assign(
      new Request(`http://mediagate.test${path}`, {
        headers: { authorization: `Bearer ${token}`, "user-agent": "door/1" },
      }),
      { ip },
    ),
  );

t(
  "wrong tokens: 401 a few times a minute per address, then 429 with Retry-After, logged at warn; the right token still gets in",
  async () => {
    const ip = "203.0.113.7";
    for (let i = 0; i < ADMIN_AUTH_FAILURES; i++) {
      const r = await from(ip, "/api/v1/admin/pauses", `guess-${i}`);
      assert.is(r.status, 401, `guess ${i}`);
    }
    const throttled = await from(ip, "/api/v1/admin/pauses", "guess-again");
    assert.is(throttled.status, 429);
    const body = await throttled.json();
    assert.equal(body, { error: ADMIN_DOOR_ERRORS.tooManyFailures, request_id: throttled.headers.get("x-request-id") });
    assert.ok(Number(throttled.headers.get("retry-after")) >= 1, "Retry-After says when");
    assert.ok(
      warnings.some((w) => w[0] === "admin authentication throttled"),
      "logged at warn",
    );
    // /metrics is behind the same door, for the same address.
    assert.is((await from(ip, "/metrics", "guess-metrics")).status, 429);
    // The right token is let in from the throttled address too: the operator is never locked out.
    assert.is((await from(ip, "/api/v1/admin/pauses", tk.adminToken)).status, 200);
    assert.is((await from(ip, "/metrics", tk.adminToken)).status, 200);
    // Another address has its own count; an IPv6 host is counted by its /64.
    assert.is((await from("198.51.100.9", "/api/v1/admin/pauses", "guess")).status, 401);
    for (let i = 0; i < ADMIN_AUTH_FAILURES; i++) await from(`2001:db8:1:2::${i + 1}`, "/api/v1/admin/pauses", "guess");
    assert.is((await from("2001:db8:1:2::ffff", "/api/v1/admin/pauses", "guess")).status, 429, "same /64");
  },
);

t("ADMIN_PORT: the admin API apart; the public port answers its paths 404", async () => {
  const pub = await serveHttp(tk.kernel, { adminToken: tk.adminToken, admin: false, port: 0, hostname: "127.0.0.1" });
  const admin = await serveAdmin(tk.kernel, { adminToken: tk.adminToken, port: 0, hostname: "127.0.0.1" });
  try {
    const auth = { authorization: `Bearer ${tk.adminToken}`, "user-agent": "door/1" };
    const onPublic = await fetch(new URL("/api/v1/admin/pauses", pub.url), { headers: auth });
    assert.is(onPublic.status, 404);
    assert.equal(await onPublic.json(), { error: "Not found", request_id: onPublic.headers.get("x-request-id") });
    const onAdmin = await fetch(new URL("/api/v1/admin/pauses", admin.url), { headers: auth });
    assert.is(onAdmin.status, 200);
    assert.match(onAdmin.headers.get("x-request-id") ?? "", /^req_/);
    assert.is(
      (await fetch(new URL("/api/v1/partner/me", admin.url), { headers: auth })).status,
      404,
      "only the admin API there",
    );
    assert.is((await fetch(new URL("/healthz", pub.url))).status, 200);
  } finally {
    await pub.close();
    await admin.close();
  }
  assert.equal(loadConfig({ ADMIN_PORT: "9300" }).admin, { port: 9300, host: "127.0.0.1" });
  assert.equal(loadConfig({ ADMIN_HOST: "10.0.0.5", PORT: "4000" }).admin, { port: 4000, host: "10.0.0.5" });
  assert.is(loadConfig({}).admin, undefined);
  for (const [env, pattern] of [
    [{ ADMIN_PORT: "70000" }, /ADMIN_PORT must be between/],
    [{ ADMIN_PORT: "3000", PORT: "3000" }, /admin API would not be apart/],
    [{ ADMIN_PORT: "9100", HEALTH_PORT: "9100" }, /ADMIN_PORT must differ from HEALTH_PORT/],
  ] as const) {
    assert.throws(
      () => loadConfig(env),
      (e: unknown) => e instanceof ConfigError && pattern.test((e as Error).message),
      JSON.stringify(env),
    );
  }
});

t("ADMIN_TOKEN strength: typed shapes refused, random keys of 128 bits always pass", () => {
  for (const weak of [
    "a".repeat(32),
    "ab".repeat(16),
    "0123456789".repeat(4),
    "01".repeat(20),
    "adm_restart_test_token_0123456789",
    "attack-corpus-admin-token-0123456789abcdef",
    "passwordpasswordpassword12345678",
    "thequickbrownfoxjumpsoverthelazydog",
    "correcthorsebatterystaplecorrecthorse",
    "1q2w3e4r5t6y7u8i9o0p1q2w3e4r5t6y",
    "qwertyuiopasdfghjklzxcvbnm123456",
    "changeme-changeme-changeme-changeme",
  ]) {
    assert.ok(weakTokenReason(weak), `${weak}: ${Math.round(estimateBits(weak))} bits`);
  }
  assert.match(weakTokenReason("short")!, /at least 32 characters \(got 5\)/);
  for (let i = 0; i < 1000; i++) {
    for (const token of [
      randomBytes(16).toString("hex"),
      randomBytes(32).toString("hex"),
      randomBytes(32).toString("base64"),
      randomBytes(24).toString("base64url"),
      `adm_${randomBytes(24).toString("hex")}`,
    ]) {
      assert.is(
        weakTokenReason(token),
        null,
        `${token}: ${estimateBits(token)} bits (at least ${MIN_ADMIN_TOKEN_BITS})`,
      );
    }
  }
});

t.run();
