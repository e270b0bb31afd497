// Issue 14, item 5: child processes see none of the server's secrets. The helper (lib/child-env.ts) on its
// own, then what the real children get: the native media engine's ffmpeg and ffprobe, and yt-dlp, each
// replaced by a stand-in script that writes out the environment it was started with, while process.env holds
// ADMIN_TOKEN, DATABASE_URL, REDIS_URL, proxy variables and a made-up secret.
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { childEnv } from "../../lib/child-env.ts";
import { createNativeEngine } from "../../lib/media/index.ts";
import { runYtdlp } from "../../plugins/social/ytdlp.ts";
import { fixture } from "./util.ts";

const SECRETS: Record<string, string> = {
  ADMIN_TOKEN: "admin-token-that-must-stay-home-0123456789",
  DATABASE_URL: "postgres://user:db-password-stays-home@127.0.0.1:5432/db",
  REDIS_URL: "redis://:redis-password-stays-home@127.0.0.1:6379",
  HTTPS_PROXY: "http://proxy.example.test:3128",
  https_proxy: "http://proxy.example.test:3128",
  HTTP_PROXY: "http://proxy.example.test:3128",
  ALL_PROXY: "socks5://proxy.example.test:1080",
  NO_PROXY: "localhost",
  MEDIAGATE_TEST_SECRET: "a-secret-of-the-server-process",
  NODE_OPTIONS: "--require /nonexistent/hook.js",
  LD_PRELOAD: "/nonexistent/preload.so",
};

/** Runs `fn` with the secrets in process.env, then puts the environment back as it was. */
async function withSecrets<T>(fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(SECRETS).map((k) => [k, process.env[k]]));
  Object.assign(process.env, SECRETS);
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** NAME=value lines of `env -0`-like output (NUL- or newline-separated). */
function parseEnv(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of text.split(/\0|\n/)) {
    const i = entry.indexOf("=");
    if (i > 0) out[entry.slice(0, i)] = entry.slice(i + 1);
  }
  return out;
}

function assertClean(env: Record<string, string>, what: string) {
  for (const [name, value] of Object.entries(SECRETS)) {
    assert.not.ok(name in env, `${what}: ${name} reached the child`);
    assert.not.ok(
      Object.values(env).some((v) => v.includes(value)),
      `${what}: the value of ${name} reached the child`,
    );
  }
  assert.ok(env.PATH, `${what}: PATH is kept`);
  assert.is(env.LANG, "C.UTF-8", what);
  assert.is(env.LC_ALL, "C.UTF-8", what);
  assert.ok(env.HOME && env.TMPDIR, `${what}: HOME and TMPDIR are given`);
}

const dir = mkdtempSync(join(tmpdir(), "mediagate-child-env-"));
/** A stand-in for a binary: writes its environment (NUL-separated) to its last argument, or to stdout. */
const standIn = join(dir, "dump-env");
writeFileSync(
  standIn,
  `#!/bin/sh\nlast=""\nfor a in "$@"; do last="$a"; done\ncase "$last" in\n  *.txt) env -0 > "$last" ;;\n  *) env -0 ;;\nesac\n`,
);
chmodSync(standIn, 0o755);

const t = suite("child processes get a minimal environment");

t.after(() => {
  rmSync(dir, { recursive: true, force: true });
});

t(
  "childEnv: PATH, a HOME and TMPDIR of the caller's choosing, a UTF-8 locale, named extras, nothing else",
  async () => {
    await withSecrets(async () => {
      const env = childEnv({ dir: "/tmp/private-run", extra: { PYTHONUNBUFFERED: "1", SKIPPED: undefined } });
      assertClean(env, "childEnv");
      assert.equal(Object.keys(env).sort(), ["HOME", "LANG", "LC_ALL", "PATH", "PYTHONUNBUFFERED", "TMPDIR"]);
      assert.is(env.HOME, "/tmp/private-run");
      assert.is(env.TMPDIR, "/tmp/private-run");
      assert.is(env.PATH, process.env.PATH);
      assert.is(childEnv({ path: "/opt/bin" }).PATH, "/opt/bin");
      assert.is(childEnv().HOME, tmpdir());
    });
  },
);

t("native ffmpeg and ffprobe runs see none of the server's secrets", async () => {
  const engine = createNativeEngine({ ffmpegPath: standIn, ffprobePath: standIn });
  try {
    await withSecrets(async () => {
      const out = await engine.run(["-i", "in.mp4", "env.txt"], {
        inputs: { "in.mp4": fixture("video1.mp4") },
        outputs: ["env.txt"],
      });
      const env = parseEnv(new TextDecoder().decode(out["env.txt"]));
      assertClean(env, "ffmpeg");
      assert.match(env.HOME!, /mediagate-ff-/, "HOME is the run's private temp dir");
    });
  } finally {
    await engine.close();
  }
  // ffprobe: a stand-in that keeps its environment beside us and answers ffprobe's JSON.
  const probeStandIn = join(dir, "probe-env");
  const probeOut = join(dir, "probe-env.out");
  writeFileSync(
    probeStandIn,
    `#!/bin/sh\nenv -0 > '${probeOut}'\nprintf '{"format":{"duration":"1.0","format_name":"mp3"},"streams":[]}'\n`,
  );
  chmodSync(probeStandIn, 0o755);
  const prober = createNativeEngine({ ffmpegPath: standIn, ffprobePath: probeStandIn });
  try {
    const probe = await withSecrets(() => prober.probe(fixture("sample1.mp3"), "in.mp3"));
    assert.is(probe.formatName, "mp3");
    assertClean(parseEnv(readFileSync(probeOut, "utf8")), "ffprobe");
  } finally {
    await prober.close();
  }
});

t("yt-dlp sees none of the server's secrets and no proxy, and runs unbuffered", async () => {
  const cwd = mkdtempSync(join(dir, "run-"));
  const res = await withSecrets(() =>
    runYtdlp(standIn, ["--dump-single-json", "--", "https://www.tiktok.com/@a/video/1"], {
      signal: new AbortController().signal,
      timeoutMs: 30_000,
      cwd,
    }),
  );
  assert.is(res.code, 0, res.stderr);
  const env = parseEnv(res.stdout);
  assertClean(env, "yt-dlp");
  assert.is(env.PYTHONUNBUFFERED, "1");
  assert.is(env.HOME, cwd, "HOME is the run's own temp dir");
  for (const name of Object.keys(env)) assert.not.match(name, /proxy/i, `${name} reached yt-dlp`);
});

t.run();
