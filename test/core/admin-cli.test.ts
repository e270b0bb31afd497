// The admin CLI is a client of the server and reads the server's configuration through the same loader
// (core/config.ts): where the server is, and the admin token.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { target } from "../../cli/admin.ts";

const dir = mkdtempSync(join(tmpdir(), "mediagate-cli-"));
const empty = mkdtempSync(join(tmpdir(), "mediagate-cli-empty-"));

test("the server URL: --url, else PUBLIC_URL, else where the server listens on this machine", () => {
  const env = { ADMIN_TOKEN: "t", DATA_DIR: empty };
  assert.is(target([], env).url, "http://127.0.0.1:3000");
  assert.is(target([], { ...env, PORT: "4100" }).url, "http://127.0.0.1:4100");
  assert.is(target([], { ...env, PORT: "4100", HOST: "0.0.0.0" }).url, "http://127.0.0.1:4100");
  assert.is(target([], { ...env, PORT: "4100", HOST: "10.1.2.3" }).url, "http://10.1.2.3:4100");
  assert.is(target([], { ...env, PUBLIC_URL: "https://api.example.com/" }).url, "https://api.example.com");
  assert.is(
    target(["--url", "http://other:1/"], { ...env, PUBLIC_URL: "https://api.example.com" }).url,
    "http://other:1",
  );
});

test("the admin token: --token, else ADMIN_TOKEN, else the one the server saved in DATA_DIR", () => {
  writeFileSync(join(dir, "admin-token"), "adm_saved\n");
  assert.is(target([], { DATA_DIR: dir }).token, "adm_saved");
  assert.is(target([], { DATA_DIR: dir, ADMIN_TOKEN: "adm_env" }).token, "adm_env");
  assert.is(target(["--token", "adm_flag"], { DATA_DIR: dir, ADMIN_TOKEN: "adm_env" }).token, "adm_flag");
  assert.throws(() => target([], { DATA_DIR: empty }), /no admin token/);
});

test("a configuration the server would refuse is refused with the same message", () => {
  assert.throws(() => target([], { ADMIN_TOKEN: "t", PORT: "http" }), /PORT must be a non-negative integer/);
});

test.run();
