// What a boot refuses, and how: an unreachable DATABASE_URL or REDIS_URL, a boolean that is neither on nor
// off, an ADMIN_TOKEN too short to be a secret, and a second process on an embedded database already open
// each stop the real server (main.ts) with one "mediagate cannot start: <VARIABLE> ..." line and exit 1, in
// bounded time, with no stack. Then what a boot makes: DATA_DIR, its blobs, the embedded database and the
// admin token are the service user's alone (0700 directories, 0600 files) whatever the umask, and the
// embedded database's lock is released on close and taken over when its process is dead.

import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { MIN_ADMIN_TOKEN_LENGTH, resolveAdminToken } from "../../core/bootstrap.ts";
import { loadConfig } from "../../core/config.ts";
import { ConfigError } from "../../lib/plugin-config.ts";
import { fileBlobStore } from "../../storage/blobs.ts";
import { DatabaseOpenError, LOCK_FILE, openDatabase } from "../../storage/db.ts";
import { spawnMain } from "../helpers/main-process.ts";
import { freePort, startServer } from "../helpers/server.ts";

const TOKEN = "adm_icoDc5nji480w8xsHo9l7F796diou6aQ52P3YfiE";
// Generous: the refusals under test come within CONNECT_TIMEOUT_MS (5 s) of the boot, and a loaded
// machine takes seconds just to load the server. What fails is a boot that hangs (60 s before) or never ends.
const EXIT_WITHIN_MS = 45_000;

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "mediagate-boot-"));
  dirs.push(dir);
  return dir;
};

/** Boots main.ts with `env`; expects exit 1 with "mediagate cannot start: " + a message matching `named`. */
async function refused(env: Record<string, string>, named: RegExp) {
  const server = spawnMain({
    PORT: String(await freePort()),
    DATA_DIR: tempDir(),
    ADMIN_TOKEN: TOKEN,
    LOG_LEVEL: "warn",
    ...env,
  });
  const exit = await server.exit(EXIT_WITHIN_MS);
  if (!exit) await server.kill();
  const out = server.output();
  assert.ok(exit, `still running after ${EXIT_WITHIN_MS} ms:\n${out}`);
  assert.is(exit!.code, 1, out);
  const line = out.split("\n").find((l) => l.startsWith("mediagate cannot start: "));
  assert.ok(line, `no "mediagate cannot start" line:\n${out}`);
  assert.match(line!.slice("mediagate cannot start: ".length), named);
  assert.not.match(out, /^\s+at /m, `a stack was printed:\n${out}`);
  return line!;
}

const t = suite("boot: refusals name their variable");

t.after(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

t(
  "unreachable DATABASE_URL and REDIS_URL, a boolean that is neither, a short ADMIN_TOKEN: one line each, exit 1",
  async () => {
    // Side by side: each is a process of its own.
    const lines = await Promise.all([
      refused(
        { DATABASE_URL: "postgres://mediagate:secret-password@127.0.0.1:1/mediagate" },
        /^DATABASE_URL: cannot connect to Postgres at 127\.0\.0\.1:1\/mediagate \(.*ECONNREFUSED/,
      ),
      refused(
        { REDIS_URL: "redis://:secret-password@127.0.0.1:1" },
        /^REDIS_URL: cannot reach Redis at 127\.0\.0\.1:1 \(.*ECONNREFUSED/,
      ),
      refused(
        { ALLOW_PRIVATE_URLS: "maybe" },
        /^ALLOW_PRIVATE_URLS must be one of 1, true, yes, on, 0, false, no, off \(got "maybe"\)$/,
      ),
      refused({ ADMIN_TOKEN: "short-token" }, /^ADMIN_TOKEN must be at least 32 characters \(got 11\)/),
    ]);
    for (const line of lines) assert.not.match(line, /secret-password/, "no password in the message");
  },
);

t("a second server on the same embedded database stops at once, naming DATA_DIR; the first keeps serving", async () => {
  const dataDir = tempDir();
  const first = await startServer({ DATA_DIR: dataDir, ADMIN_TOKEN: TOKEN, LOG_LEVEL: "warn" });
  try {
    const line = await refused(
      { DATA_DIR: dataDir },
      /^DATA_DIR .* the embedded database is already open in process \d+ on this host/,
    );
    assert.match(line, new RegExp(`process ${first.pid} `));
    assert.is((await fetch(`${first.url}/healthz`)).status, 200);
    assert.is(
      (
        await fetch(`${first.url}/api/v1/admin/partners/prt_none`, {
          headers: { authorization: `Bearer ${TOKEN}`, "user-agent": "boot-test/1" },
        })
      ).status,
      404,
      "the first server still reads its database",
    );
  } finally {
    await first.stop();
  }
  assert.not.ok(existsSync(join(dataDir, LOCK_FILE)), "a clean stop releases the lock");
});

t("booleans are strict, for every spelling; HEALTH_PORT is a port", () => {
  for (const on of ["1", "true", "TRUE", "yes", "on", " On "])
    assert.is(loadConfig({ ALLOW_PRIVATE_URLS: on }).allowPrivateUrls, true, on);
  for (const off of ["0", "false", "no", "off", "OFF", ""])
    assert.is(loadConfig({ ALLOW_PRIVATE_URLS: off }).allowPrivateUrls, false, off);
  for (const bad of ["maybe", "2", "enabled", "y"]) {
    assert.throws(
      () => loadConfig({ ALLOW_PRIVATE_URLS: bad }),
      (e: unknown) => e instanceof ConfigError && (e as Error).message.startsWith("ALLOW_PRIVATE_URLS must be one of"),
      bad,
    );
  }
  assert.is(loadConfig({}).healthPort, undefined);
  assert.is(loadConfig({ HEALTH_PORT: "9100" }).healthPort, 9100);
  assert.throws(() => loadConfig({ HEALTH_PORT: "0" }), /HEALTH_PORT must be between 1 and 65535/);
  assert.throws(() => loadConfig({ HEALTH_PORT: "probe" }), /HEALTH_PORT must be a non-negative integer/);
  assert.throws(() => loadConfig({ HEALTH_PORT: "3000", PORT: "3000" }), /HEALTH_PORT must differ from PORT/);
});

t(
  "ADMIN_TOKEN: at least 32 characters and hard to guess for the server, from the environment or the saved file",
  () => {
    const dir = tempDir();
    assert.throws(
      () => resolveAdminToken("x".repeat(MIN_ADMIN_TOKEN_LENGTH - 1), dir),
      (e: unknown) =>
        e instanceof ConfigError && /^ADMIN_TOKEN must be at least 32 characters \(got 31\)/.test((e as Error).message),
    );
    // Long enough, and guessable: one character, a counting run, words (core/token-strength.ts).
    for (const weak of [
      "x".repeat(MIN_ADMIN_TOKEN_LENGTH),
      "0123456789".repeat(4),
      "my-admin-secret-token-for-production",
    ]) {
      assert.throws(
        () => resolveAdminToken(weak, dir),
        (e: unknown) => e instanceof ConfigError && /^ADMIN_TOKEN is too easy to guess/.test((e as Error).message),
        weak,
      );
    }
    assert.equal(resolveAdminToken(TOKEN, dir), { token: TOKEN, created: false });
    writeFileSync(join(dir, "admin-token"), "adm_short\n");
    assert.throws(() => resolveAdminToken(undefined, dir), /admin token saved in .* must be at least 32 characters/);
    // The CLI is a client: it sends what it is given (test/core/admin-cli.test.ts), and the server decides.
  },
);

const s = suite("boot: DATA_DIR is private, and the embedded database is one process's");

s.after(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Every path under `root` whose mode is not 0700 (directories) or 0600 (files). */
function notPrivate(root: string): string[] {
  const wrong: string[] = [];
  const walk = (path: string) => {
    const st = statSync(path);
    const mode = st.mode & 0o777;
    if (st.isDirectory()) {
      if (mode !== 0o700) wrong.push(`${path} ${mode.toString(8)}`);
      for (const name of readdirSync(path)) walk(join(path, name));
    } else if (st.isFile() && mode !== 0o600) wrong.push(`${path} ${mode.toString(8)}`);
  };
  walk(root);
  return wrong;
}

s("DATA_DIR, blobs, database files, the lock and the admin token: 0700 and 0600, even under umask 000", async () => {
  const parent = tempDir();
  const dataDir = join(parent, "nested", "data");
  const before = process.umask(0);
  try {
    resolveAdminToken(undefined, dataDir);
    const database = await openDatabase({ dataDir });
    try {
      await database.kysely.schema.createTable("t").addColumn("n", "integer").execute();
      const blobs = fileBlobStore(dataDir).scoped("images");
      await blobs.put("gen/abc/0.png", new Uint8Array([1, 2, 3]), { contentType: "image/png" });
      await blobs.put("gen/abc/0.png", new Uint8Array([4])); // an overwrite keeps it private
      assert.equal([...(await blobs.get("gen/abc/0.png"))!], [4]);
      assert.ok(existsSync(join(dataDir, LOCK_FILE)));
      assert.equal(notPrivate(join(parent, "nested")), []);
    } finally {
      await database.close();
    }
    assert.not.ok(existsSync(join(dataDir, LOCK_FILE)), "close releases the lock");
    assert.equal(notPrivate(join(parent, "nested")), []);
  } finally {
    process.umask(before);
  }
});

s("an existing blobs directory is narrowed; an existing DATA_DIR keeps the mode its operator gave it", async () => {
  const dataDir = tempDir();
  const { chmodSync, mkdirSync } = await import("node:fs");
  chmodSync(dataDir, 0o750);
  mkdirSync(join(dataDir, "blobs"), { mode: 0o755 });
  chmodSync(join(dataDir, "blobs"), 0o755);
  fileBlobStore(dataDir);
  assert.is(statSync(join(dataDir, "blobs")).mode & 0o777, 0o700);
  assert.is(statSync(dataDir).mode & 0o777, 0o750);
});

s(
  "the embedded database is locked: a second open fails at once; a lock whose process is dead is taken over",
  async () => {
    const dataDir = tempDir();
    const first = await openDatabase({ dataDir });
    try {
      const err = await openDatabase({ dataDir }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(err instanceof DatabaseOpenError, String(err));
      assert.match((err as Error).message, new RegExp(`already open in process ${process.pid} on this host`));
    } finally {
      await first.close();
    }
    // A crashed process leaves its lock; its pid is dead (a reaped child's), so the next open takes it over.
    const { spawnSync } = await import("node:child_process");
    const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
    const deadPid = Number(dead.stdout);
    writeFileSync(
      join(dataDir, LOCK_FILE),
      `${JSON.stringify({ pid: deadPid, host: hostname(), since: "2026-01-01T00:00:00.000Z" })}\n`,
    );
    const second = await openDatabase({ dataDir });
    await second.close();
    // A live process on another host: held while it refreshes the lock (its pid means nothing here).
    writeFileSync(
      join(dataDir, LOCK_FILE),
      `${JSON.stringify({ pid: 1, host: "elsewhere.example", since: "2026-01-01T00:00:00.000Z" })}\n`,
    );
    const remote = await openDatabase({ dataDir }).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(
      remote instanceof DatabaseOpenError && /process 1 on host elsewhere\.example/.test(remote.message),
      String(remote),
    );
    rmSync(join(dataDir, LOCK_FILE));
  },
);

t.run();
s.run();
