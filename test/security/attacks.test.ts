// The attack corpus (issue 14, "Tests and measurements") against a real server: main.ts in its own process
// (test/helpers/server.ts), so its event loop is not this one. Each attack must be answered within a
// generous time-out with a 4xx (a WebSocket: closed with 1009 or a 44xx code, or an `error` message for the
// operation), and leave the server responsive. While each attack runs, /healthz is polled about every 50 ms
// and the slowest answer is recorded; the table (attack, status, worst /healthz ms) is printed at the end.
// The figures are measurements to report, not assertions: only "/healthz answered within the time-out" is
// asserted (a loaded CI machine makes any latency bound flaky).
//
// The attacks: GraphQL bombs over HTTP (150k and 1M aliases, depth 1000, fragment cycles and fan-out,
// directive floods, huge strings in the document and in variables), the same over WebSocket together with
// oversized frames and connections that do not authenticate, and manifests disguised as media (DASH, HLS,
// ffconcat and concat scripts pointing at /etc/passwd or at a media file on the server's disk) uploaded to
// extend-music or fetched by URL for upscale-video and remove-metadata. For the manifests, the passwd bytes
// must not appear anywhere the partner can read: the answer, the job's status, or any file it links.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { spawnSync } from "node:child_process";
import { createServer, get as httpGet, type Server } from "node:http";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import WebSocket from "ws";
import { startServer, type ServerProcess } from "../helpers/server.ts";
import {
  aliasBomb,
  concatScript,
  containsPasswd,
  dashManifest,
  depthBomb,
  directiveFlood,
  ffconcatScript,
  fragmentCycle,
  fragmentFanOut,
  hlsPlaylist,
  hugeStringLiteral,
} from "./attack-corpus.ts";

/** An attack (or a /healthz poll) still unanswered after this long has not answered at all. */
const ANSWER_TIMEOUT_MS = 20_000;
/** Between attacks: how long the server may take to come back before the next attack is measured. */
const RECOVERY_TIMEOUT_MS = 120_000;
const HEALTH_INTERVAL_MS = 50;
const UA = "mediagate-attack-corpus/1.0";
const ADMIN_TOKEN = "adm_OR9dKPhmD8Pt4RYexJxqKZw8pYnWmjAqw40HmDy4";
const FIXTURES = resolve(import.meta.dirname ?? "test/security", "../../../shared/fixtures/media");
const AUDIO_ON_DISK = join(FIXTURES, "sample1.mp3");
const VIDEO_ON_DISK = join(FIXTURES, "video1.mp4");

const t = suite("attack corpus against a real server");
let server: ServerProcess;
let dataDir: string;
let secretsDir: string;
/**
 * A fragmented MP4 of audio on the server's disk, made with ffmpeg when it is installed (without it the
 * server runs the wasm engine, which has no access to local files). ffmpeg's DASH demuxer reads this kind
 * of file through a manifest's BaseURL: the "upload" becomes a file the partner never had.
 */
let localM4a: string | undefined;
let files: Server; // serves manifests by URL (upscale-video, remove-metadata), like a partner's host would
let filesUrl = "";
const served = new Map<string, string>();
const table: Array<{ attack: string; status: string; worstMs: number; polls: number; note: string }> = [];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.before(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "mediagate-attacks-"));
  secretsDir = mkdtempSync(join(tmpdir(), "mediagate-attack-secrets-"));
  const m4a = join(secretsDir, "private.m4a");
  const made = spawnSync("ffmpeg", ["-nostdin", "-y", "-loglevel", "error", "-i", AUDIO_ON_DISK, "-t", "20", "-c:a", "aac", "-movflags", "frag_keyframe+empty_moov+default_base_moof", "-f", "mp4", m4a], { stdio: "ignore", timeout: 60_000 });
  if (made.status === 0 && existsSync(m4a)) localM4a = m4a;
  server = await startServer({ DATA_DIR: dataDir, ADMIN_TOKEN, LOG_LEVEL: "warn", ALLOW_PRIVATE_URLS: "1" }, 120_000);
  files = createServer((req, res) => {
    const body = served.get(req.url ?? "");
    if (body === undefined) return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": "video/mp4", "content-length": Buffer.byteLength(body) }).end(body);
  });
  await new Promise<void>((r) => files.listen(0, "127.0.0.1", () => r()));
  filesUrl = `http://127.0.0.1:${(files.address() as { port: number }).port}`;
});

t.after(async () => {
  const width = Math.max(6, ...table.map((r) => r.attack.length));
  const sw = Math.max(6, ...table.map((r) => r.status.length));
  const lines = [
    "",
    `${"attack".padEnd(width)}  ${"status".padEnd(sw)}  worst /healthz ms  (polls)  note`,
    ...table.map((r) => `${r.attack.padEnd(width)}  ${r.status.padEnd(sw)}  ${String(r.worstMs).padStart(17)}  ${`(${r.polls})`.padStart(7)}  ${r.note}`),
  ];
  console.log(lines.join("\n"));
  await new Promise<void>((r) => (files ? files.close(() => r()) : r()));
  await server?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  if (secretsDir) rmSync(secretsDir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------------------
// Measuring

/**
 * One GET /healthz on a connection of its own (no keep-alive: a pooled socket the server is just closing
 * would fail the poll for a reason that is not the server's responsiveness).
 */
function healthzOnce(timeoutMs = ANSWER_TIMEOUT_MS): Promise<{ ok: boolean; ms: number; error?: string }> {
  const started = performance.now();
  const ms = () => Math.round(performance.now() - started);
  return new Promise((done) => {
    const req = httpGet(`${server.url}/healthz`, { agent: false, headers: { "user-agent": UA } }, (res) => {
      res.resume();
      res.on("end", () => done({ ok: res.statusCode === 200, ms: ms(), ...(res.statusCode === 200 ? {} : { error: `HTTP ${res.statusCode}` }) }));
      res.on("error", (err) => done({ ok: false, ms: ms(), error: String(err) }));
    });
    req.setTimeout(timeoutMs, () => {
      req.destroy();
      done({ ok: false, ms: ms(), error: `no answer in ${timeoutMs} ms` });
    });
    req.on("error", (err) => done({ ok: false, ms: ms(), error: String(err) }));
  });
}

/** Polls /healthz every ~50 ms until stopped; a poll in flight when stopped is waited for (its wait counts). */
function pollHealth() {
  let running = true;
  let worst = 0;
  let polls = 0;
  const failures: string[] = [];
  const loop = (async () => {
    while (running) {
      const r = await healthzOnce();
      polls++;
      worst = Math.max(worst, r.ms);
      if (!r.ok) failures.push(r.error ?? "not ok");
      await sleep(HEALTH_INTERVAL_MS);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { worst, polls, failures };
    },
  };
}

async function waitUntilHealthy(): Promise<void> {
  const until = Date.now() + RECOVERY_TIMEOUT_MS;
  while (Date.now() < until) {
    if ((await healthzOnce(5_000)).ok) return;
    await sleep(250);
  }
  throw new Error(`the server did not answer /healthz within ${RECOVERY_TIMEOUT_MS} ms`);
}

interface Outcome {
  /** An HTTP status, or for a WebSocket `close <code>` / `error message` / what it answered instead. */
  status: string;
  refused: boolean;
  note?: string;
  /**
   * Run after the measurement, on its own time: where the passwd bytes can be read (the job's status once
   * it ends, the files it links), or null. Kept out of the attack so a job's run is not the answer's time.
   */
  followUp?: () => Promise<string | null>;
}

/**
 * Runs one attack with /healthz polled meanwhile; records the row; asserts the attack was refused within
 * the time-out, /healthz answered throughout, and the server answers afterwards.
 */
async function underAttack(name: string, attack: (signal: AbortSignal) => Promise<Outcome>): Promise<Outcome | undefined> {
  await waitUntilHealthy(); // the last attack's aftermath is not this one's
  const controller = new AbortController();
  const poll = pollHealth();
  let outcome: Outcome | undefined;
  let error: unknown;
  let timer: NodeJS.Timeout | undefined;
  try {
    outcome = await Promise.race([
      attack(controller.signal),
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer in ${ANSWER_TIMEOUT_MS} ms`)), ANSWER_TIMEOUT_MS))),
    ]);
  } catch (err) {
    error = err;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  const health = await poll.stop();
  const after = await healthzOnce();
  const leak = outcome?.followUp ? await outcome.followUp().catch((err) => `(the check failed: ${err})`) : null;
  const status = outcome?.status ?? `no answer (${(error as Error)?.message ?? error})`;
  const notes = [
    outcome?.note,
    leak ? `passwd bytes in ${leak}` : "",
    health.failures.length ? `/healthz failed ${health.failures.length}x: ${health.failures[0]}` : "",
    after.ok ? "" : `/healthz after: ${after.error}`,
  ];
  table.push({ attack: name, status, worstMs: health.worst, polls: health.polls, note: notes.filter(Boolean).join("; ") });
  assert.ok(outcome, `${name}: ${status}`);
  assert.is(leak, null, `${name}: the passwd bytes can be read in ${leak}`);
  assert.ok(outcome!.refused, `${name}: expected a 4xx (or a refused WebSocket), got ${status}${outcome!.note ? ` (${outcome!.note})` : ""}`);
  assert.equal(health.failures, [], `${name}: /healthz did not answer within ${ANSWER_TIMEOUT_MS} ms while under attack`);
  assert.ok(after.ok, `${name}: /healthz after the attack: ${after.error}`);
  return outcome;
}

// ---------------------------------------------------------------------------------------------------------
// GraphQL over HTTP

async function graphqlPost(body: string, signal: AbortSignal, key?: string): Promise<Outcome> {
  const res = await fetch(`${server.url}/graphql`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/graphql-response+json, application/json",
      "user-agent": UA,
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
    body,
    signal,
  });
  const text = await res.text();
  let note = `${(text.length / 1024).toFixed(0)} kB answer`;
  try {
    const parsed = JSON.parse(text);
    if (parsed?.errors?.[0]?.message) note += `: ${String(parsed.errors[0].message).slice(0, 80)}${parsed.errors.length > 1 ? ` (+${parsed.errors.length - 1} errors)` : ""}`;
  } catch {
    note += `: ${text.slice(0, 80).replace(/\s+/g, " ")}`;
  }
  return { status: String(res.status), refused: res.status >= 400 && res.status < 500, note };
}

const query = (q: string, variables?: Record<string, unknown>) => JSON.stringify({ query: q, ...(variables ? { variables } : {}) });

// Payloads are built here, before the measurement starts.
const graphqlAttacks: Array<[string, () => string]> = [
  ["GraphQL depth 1000 (introspection)", () => query(depthBomb(1000))],
  // Small enough to pass a document-size or token cap, so the depth, alias and directive rules are met.
  ["GraphQL depth 300 (a small document)", () => query(depthBomb(300))],
  ["GraphQL 500 aliases (a small document)", () => query(aliasBomb(500))],
  ["GraphQL 300 directives (a small document)", () => query(directiveFlood(300))],
  ["GraphQL fragment cycle (2)", () => query(fragmentCycle(2))],
  ["GraphQL fragment cycle (5,000)", () => query(fragmentCycle(5_000))],
  ["GraphQL 50k directives on one field", () => query(directiveFlood(50_000))],
  ["GraphQL 20 MB string literal", () => query(hugeStringLiteral(20_000_000))],
  ["GraphQL 20 MB string in variables", () => query("query($s: String!) { __type(name: $s) { name } }", { s: "A".repeat(20_000_000) })],
  ["GraphQL 150k aliases (2.9 MB)", () => query(aliasBomb(150_000))],
  // Valid, 40 fragments deep: only a cost or depth limit that follows spreads without memory would explode.
  ["GraphQL fragment fan-out (2^40 paths)", () => query(fragmentFanOut(40))],
];

for (const [name, build] of graphqlAttacks) {
  t(`${name}, unauthenticated: a 4xx, and the server stays responsive`, async () => {
    const body = build();
    await underAttack(name, (signal) => graphqlPost(body, signal));
  });
}

// ---------------------------------------------------------------------------------------------------------
// GraphQL over WebSocket (graphql-ws protocol)

const REFUSED_CLOSE = (code: number) => code === 1009 || code === 1008 || code === 1006 || (code >= 4400 && code < 4500);

interface WsRun {
  /** Sent once the socket is open; resolves when the attack's own frame has been handed over. */
  afterOpen(ws: WebSocket, messages: Array<Record<string, any>>): Promise<void> | void;
  /** Whether this message means the server accepted what it should have refused. */
  accepted(message: Record<string, any>): boolean;
  /** Whether this message is a refusal (graphql-ws `error` for the operation). */
  refusal?(message: Record<string, any>): boolean;
}

function wsAttack(run: WsRun, signal: AbortSignal): Promise<Outcome> {
  return new Promise<Outcome>((resolveOutcome, reject) => {
    const ws = new WebSocket(`${server.url.replace(/^http/, "ws")}/graphql`, "graphql-transport-ws", { headers: { "user-agent": UA }, maxPayload: 64 * 1024 * 1024 });
    const messages: Array<Record<string, any>> = [];
    let settled = false;
    const settle = (o: Outcome) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener("abort", onAbort);
      if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.terminate();
      resolveOutcome(o);
    };
    const onAbort = () => {
      ws.terminate();
      if (!settled) {
        settled = true;
        reject(new Error("aborted"));
      }
    };
    signal.addEventListener("abort", onAbort);
    ws.on("open", () => {
      Promise.resolve(run.afterOpen(ws, messages)).catch((err) => settle({ status: `send failed: ${err}`, refused: false }));
    });
    ws.on("message", (data) => {
      let m: Record<string, any>;
      try {
        m = JSON.parse(String(data));
      } catch {
        return settle({ status: "non-JSON message", refused: false, note: String(data).slice(0, 80) });
      }
      messages.push(m);
      if (run.refusal?.(m)) return settle({ status: `${m.type} message`, refused: true, note: JSON.stringify(m.payload ?? "").slice(0, 100) });
      if (run.accepted(m)) return settle({ status: `accepted (${m.type})`, refused: false, note: JSON.stringify(m).slice(0, 100) });
    });
    ws.on("unexpected-response", (_req, res) => settle({ status: `upgrade refused ${res.statusCode}`, refused: (res.statusCode ?? 0) >= 400 && (res.statusCode ?? 0) < 500 }));
    ws.on("error", () => {
      // A reset while a big frame is still being written; the close event that follows carries the code.
    });
    ws.on("close", (code, reason) => settle({ status: `close ${code}`, refused: REFUSED_CLOSE(code), note: String(reason).slice(0, 80) }));
  });
}

const send = (ws: WebSocket, message: unknown) =>
  new Promise<void>((res, rej) => ws.send(typeof message === "string" ? message : JSON.stringify(message), (err) => (err && !/not opened|CLOSED|EPIPE|ECONNRESET/i.test(String(err)) ? rej(err) : res())));

/** connection_init with the key; resolves on connection_ack. */
function authenticate(ws: WebSocket, messages: Array<Record<string, any>>, key: string): Promise<void> {
  return new Promise((res, rej) => {
    const check = () => {
      if (messages.some((m) => m.type === "connection_ack")) return res();
      if (ws.readyState !== WebSocket.OPEN) return rej(new Error("closed before connection_ack"));
      setTimeout(check, 20);
    };
    send(ws, { type: "connection_init", payload: { authorization: `Bearer ${key}` } }).then(check, rej);
  });
}

const FIVE_MB = "A".repeat(5 * 1024 * 1024);
let demoKey = "";
const keyOf = () => {
  demoKey ||= /svc_partner_\S+/.exec(server.output())?.[0] ?? "";
  if (!demoKey) throw new Error(`the server printed no demo key:\n${server.output()}`);
  return demoKey;
};

t("WebSocket: a 5 MB frame before connection_init is refused", async () => {
  const frame = JSON.stringify({ type: "ping", payload: { pad: FIVE_MB } });
  await underAttack("WS 5 MB frame before connection_init", (signal) =>
    wsAttack({ afterOpen: (ws) => send(ws, frame), accepted: (m) => m.type === "pong" || m.type === "connection_ack" }, signal),
  );
});

t("WebSocket: a 5 MB frame after connection_init is refused", async () => {
  const key = keyOf();
  const frame = JSON.stringify({ id: "1", type: "subscribe", payload: { query: "{ __typename }", variables: { pad: FIVE_MB } } });
  await underAttack("WS 5 MB frame after connection_init", (signal) =>
    wsAttack({ afterOpen: async (ws, messages) => (await authenticate(ws, messages, key), send(ws, frame)), accepted: (m) => m.type === "next" || m.type === "complete" }, signal),
  );
});

t("WebSocket: connection_init without a key is closed", async () => {
  await underAttack("WS connection_init without a key", (signal) =>
    wsAttack({ afterOpen: (ws) => send(ws, { type: "connection_init" }), accepted: (m) => m.type === "connection_ack" }, signal),
  );
});

t("WebSocket: connection_init with a wrong key is closed", async () => {
  await underAttack("WS connection_init with a wrong key", (signal) =>
    wsAttack({ afterOpen: (ws) => send(ws, { type: "connection_init", payload: { authorization: "Bearer svc_partner_not0a0real0key000000" } }), accepted: (m) => m.type === "connection_ack" }, signal),
  );
});

t("WebSocket: subscribe with 150k aliases is refused", async () => {
  const key = keyOf();
  const frame = JSON.stringify({ id: "1", type: "subscribe", payload: { query: aliasBomb(150_000) } });
  await underAttack("WS subscribe 150k aliases", (signal) =>
    wsAttack({ afterOpen: async (ws, messages) => (await authenticate(ws, messages, key), send(ws, frame)), accepted: (m) => m.type === "next" || m.type === "complete", refusal: (m) => m.type === "error" }, signal),
  );
});

t("WebSocket: subscribe with depth 1000 is refused", async () => {
  const key = keyOf();
  const frame = JSON.stringify({ id: "1", type: "subscribe", payload: { query: depthBomb(1000) } });
  await underAttack("WS subscribe depth 1000", (signal) =>
    wsAttack({ afterOpen: async (ws, messages) => (await authenticate(ws, messages, key), send(ws, frame)), accepted: (m) => m.type === "next" || m.type === "complete", refusal: (m) => m.type === "error" }, signal),
  );
});

t("WebSocket: subscribe with 20,000 directives is refused", async () => {
  const key = keyOf();
  const frame = JSON.stringify({ id: "1", type: "subscribe", payload: { query: directiveFlood(20_000) } });
  await underAttack("WS subscribe 20k directives", (signal) =>
    wsAttack({ afterOpen: async (ws, messages) => (await authenticate(ws, messages, key), send(ws, frame)), accepted: (m) => m.type === "next" || m.type === "complete", refusal: (m) => m.type === "error" }, signal),
  );
});

// ---------------------------------------------------------------------------------------------------------
// Manifests disguised as media

let partnerCount = 0;
/** A fresh account per attack (each operation allows 5 a minute per key; a 429 would hide the answer). */
async function freshPartner(): Promise<string> {
  const res = await fetch(`${server.url}/api/v1/admin/partners`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json", "user-agent": UA },
    body: JSON.stringify({ name: `Attacker ${++partnerCount}`, credits: 100_000 }),
  });
  const body = (await res.json()) as any;
  if (res.status !== 201) throw new Error(`admin create partner: ${res.status} ${JSON.stringify(body)}`);
  return body.api_key;
}

const PASSWD_LINE = (() => {
  try {
    return readFileSync("/etc/passwd", "utf8").split("\n")[0] ?? "";
  } catch {
    return "";
  }
})();
const leaks = (bytes: Uint8Array | string) => containsPasswd(bytes) ?? (PASSWD_LINE && Buffer.from(bytes as any).toString("latin1").includes(PASSWD_LINE) ? PASSWD_LINE : null);

/**
 * Everything the partner can read after the request: the answer, the job's status once it ends (when a job
 * was accepted), and every file they link. Returns where the passwd bytes showed up, if anywhere.
 */
async function passwdReachable(key: string, answer: string, statusPath: ((id: string) => string) | undefined): Promise<string | null> {
  const signal = AbortSignal.timeout(120_000);
  if (leaks(answer)) return "the answer";
  let parsed: any;
  try {
    parsed = JSON.parse(answer);
  } catch {
    return null;
  }
  const texts: string[] = [];
  const id = parsed?.job_id;
  if (typeof id === "string" && statusPath) {
    // Until the job ends (a loaded machine may take a while to run it).
    for (let i = 0; i < 600 && !signal.aborted; i++) {
      const res = await fetch(`${server.url}/api/v1/partner${statusPath(id)}`, { headers: { authorization: `Bearer ${key}`, "user-agent": UA }, signal });
      const text = await res.text();
      texts.push(text);
      if (leaks(text)) return "the job status";
      if (/"status"\s*:\s*"(complete|completed|failed|error)"/.test(text) || res.status >= 400) break;
      await sleep(200);
    }
  }
  const urls = new Set<string>();
  for (const text of [answer, ...texts]) for (const m of text.matchAll(/https?:\/\/[^"\s]+\/media\/[^"\s]+/g)) urls.add(m[0]);
  for (const u of urls) {
    const local = `${server.url}${new URL(u).pathname}`;
    const res = await fetch(local, { headers: { "user-agent": UA }, signal });
    if (leaks(new Uint8Array(await res.arrayBuffer()))) return `the file ${new URL(u).pathname}`;
  }
  return null;
}

async function uploadToExtendMusic(content: string, filename: string, signal: AbortSignal): Promise<Outcome> {
  const key = await freshPartner();
  const form = new FormData();
  form.set("parameters", JSON.stringify({ continue_at: 1, prompt: "go on" }));
  form.set("audio", new Blob([content], { type: "audio/mpeg" }), filename);
  const res = await fetch(`${server.url}/api/v1/partner/extend-music`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "user-agent": UA, "idempotency-key": `attack-${Date.now()}-${partnerCount}` },
    body: form,
    signal,
  });
  const text = await res.text();
  const followUp = () => passwdReachable(key, text, (id) => `/music-status/${id}`);
  return { status: String(res.status), refused: res.status >= 400 && res.status < 500, note: text.slice(0, 90), followUp };
}

async function byUrl(path: string, field: string, content: string, signal: AbortSignal, statusPath?: (id: string) => string): Promise<Outcome> {
  const key = await freshPartner();
  const name = `/m${partnerCount}/clip.mp4`;
  served.set(name, content);
  const res = await fetch(`${server.url}/api/v1/partner${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "user-agent": UA, "content-type": "application/json" },
    body: JSON.stringify({ [field]: `${filesUrl}${name}` }),
    signal,
  });
  const text = await res.text();
  const followUp = () => passwdReachable(key, text, statusPath);
  return { status: String(res.status), refused: res.status >= 400 && res.status < 500, note: text.slice(0, 90), followUp };
}

const manifests: Array<[string, (signal: AbortSignal) => Promise<Outcome>]> = [
  ["extend-music: DASH .mpd as up.mp3, BaseURL file:/etc/passwd", (s) => uploadToExtendMusic(dashManifest("file:/etc/passwd"), "up.mp3", s)],
  ["extend-music: DASH .mpd as up.mp3, BaseURL a local mp4", (s) => uploadToExtendMusic(dashManifest(`file:${VIDEO_ON_DISK}`, "video/mp4"), "up.mp3", s)],
  // The one the review found: ffmpeg 5.1 decodes a local fragmented MP4 through the manifest.
  ["extend-music: DASH .mpd as up.mp3, BaseURL a local fragmented m4a", (s) => uploadToExtendMusic(dashManifest(`file:${localM4a}`), "up.mp3", s)],
  // The one the review found working on ffmpeg 5.1: a playlist of a local mp3 is two minutes of "upload".
  ["extend-music: HLS .m3u8 as up.mp3, a local mp3", (s) => uploadToExtendMusic(hlsPlaylist([AUDIO_ON_DISK]), "up.mp3", s)],
  ["extend-music: HLS .m3u8 as up.mp3, file:/etc/passwd", (s) => uploadToExtendMusic(hlsPlaylist(["file:/etc/passwd"]), "up.mp3", s)],
  ["extend-music: ffconcat as up.wav (passwd, local mp3)", (s) => uploadToExtendMusic(ffconcatScript(["/etc/passwd", AUDIO_ON_DISK]), "up.wav", s)],
  ["extend-music: concat script as up.ogg", (s) => uploadToExtendMusic(concatScript([AUDIO_ON_DISK, "/etc/passwd"]), "up.ogg", s)],
  ["upscale-video: DASH by URL as clip.mp4 (local mp4)", (s) => byUrl("/upscale-video", "video_url", dashManifest(`file:${VIDEO_ON_DISK}`, "video/mp4"), s, (id) => `/video-status/${id}`)],
  ["upscale-video: HLS by URL as clip.mp4 (passwd)", (s) => byUrl("/upscale-video", "video_url", hlsPlaylist(["file:/etc/passwd", `file:${VIDEO_ON_DISK}`]), s, (id) => `/video-status/${id}`)],
  ["remove-metadata: DASH by URL as clip.mp4 (local mp4)", (s) => byUrl("/remove-metadata", "video_url", dashManifest(`file:${VIDEO_ON_DISK}`, "video/mp4"), s)],
  ["remove-metadata: ffconcat by URL as clip.mp4 (passwd)", (s) => byUrl("/remove-metadata", "video_url", ffconcatScript(["/etc/passwd", VIDEO_ON_DISK]), s)],
];

for (const [name, attack] of manifests) {
  t(`${name}: a 4xx, and no passwd bytes anywhere reachable`, async () => {
    assert.ok(existsSync(AUDIO_ON_DISK) && existsSync(VIDEO_ON_DISK), "the media fixtures are missing");
    if (name.includes("fragmented m4a") && !localM4a) {
      table.push({ attack: name, status: "skipped", worstMs: 0, polls: 0, note: "no native ffmpeg here to make the local file" });
      return;
    }
    await underAttack(name, attack);
  });
}

// Last of all: unpatched, it held the whole server for about 30 s and took 2.4 GB.
t("GraphQL 1M aliases (22 MB), unauthenticated: a 4xx, and the server stays responsive", async () => {
  const body = query(aliasBomb(1_000_000));
  await underAttack("GraphQL 1M aliases (22 MB)", (signal) => graphqlPost(body, signal));
});

t("the server is still serving partners after the whole corpus", async () => {
  const res = await fetch(`${server.url}/api/v1/partner/me`, { headers: { authorization: `Bearer ${keyOf()}`, "user-agent": UA }, signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS) });
  assert.is(res.status, 200);
});

t.run();
