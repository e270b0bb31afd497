// The attack corpus (issue 14, "Tests and measurements") against a real server, with the harness of every
// attack file (test/security/under-attack.ts: main.ts in its own process, /healthz polled and memory sampled
// while each attack runs, a table printed at the end). Each attack must be answered within the harness's
// time-out with a 4xx (a WebSocket: closed with 1009 or a 44xx code, or an `error` message for the
// operation), and leave the server responsive.
//
// The attacks: GraphQL bombs over HTTP (150k and 1M aliases, depth 1000, fragment cycles and fan-out,
// directive floods, huge strings in the document and in variables), the same over WebSocket together with
// oversized frames and connections that do not authenticate, and manifests disguised as media (DASH, HLS,
// ffconcat and concat scripts pointing at /etc/passwd or at a media file on the server's disk) uploaded to
// extend-music or fetched by URL for upscale-video and remove-metadata. For the manifests, the passwd bytes
// must not appear anywhere the partner can read: the answer, the job's status, or any file it links.

import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import WebSocket from "ws";
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
import {
  ANSWER_TIMEOUT_MS,
  type AttackServer,
  underAttack as attackWith,
  fileHost,
  freshPartner as newPartner,
  type Outcome,
  printAttackTable,
  recordSkipped,
  startAttackServer,
  UA,
} from "./under-attack.ts";

const FIXTURES = resolve(import.meta.dirname ?? "test/security", "../../../shared/fixtures/media");
const AUDIO_ON_DISK = join(FIXTURES, "sample1.mp3");
const VIDEO_ON_DISK = join(FIXTURES, "video1.mp4");

const t = suite("attack corpus against a real server");
let server: AttackServer;
let secretsDir: string;
/**
 * A fragmented MP4 of audio on the server's disk, made with ffmpeg when it is installed (without it the
 * server runs the wasm engine, which has no access to local files). ffmpeg's DASH demuxer reads this kind
 * of file through a manifest's BaseURL: the "upload" becomes a file the partner never had.
 */
let localM4a: string | undefined;
let files: Awaited<ReturnType<typeof fileHost>>; // serves manifests by URL (upscale-video, remove-metadata), like a partner's host would

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const underAttack = (name: string, attack: (signal: AbortSignal) => Promise<Outcome>) =>
  attackWith(server, name, attack);

t.before(async () => {
  secretsDir = mkdtempSync(join(tmpdir(), "mediagate-attack-secrets-"));
  const m4a = join(secretsDir, "private.m4a");
  const made = spawnSync(
    "ffmpeg",
    [
      "-nostdin",
      "-y",
      "-loglevel",
      "error",
      "-i",
      AUDIO_ON_DISK,
      "-t",
      "20",
      "-c:a",
      "aac",
      "-movflags",
      "frag_keyframe+empty_moov+default_base_moof",
      "-f",
      "mp4",
      m4a,
    ],
    { stdio: "ignore", timeout: 60_000 },
  );
  if (made.status === 0 && existsSync(m4a)) localM4a = m4a;
  server = await startAttackServer({ ALLOW_PRIVATE_URLS: "1" });
  files = await fileHost();
});

t.after(async () => {
  printAttackTable();
  await files?.close();
  await server?.stop();
  if (secretsDir) rmSync(secretsDir, { recursive: true, force: true });
});

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
    if (parsed?.errors?.[0]?.message)
      note += `: ${String(parsed.errors[0].message).slice(0, 80)}${parsed.errors.length > 1 ? ` (+${parsed.errors.length - 1} errors)` : ""}`;
  } catch {
    note += `: ${text.slice(0, 80).replace(/\s+/g, " ")}`;
  }
  return { status: String(res.status), refused: res.status >= 400 && res.status < 500, note };
}

const query = (q: string, variables?: Record<string, unknown>) =>
  JSON.stringify({ query: q, ...(variables ? { variables } : {}) });

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
  [
    "GraphQL 20 MB string in variables",
    () => query("query($s: String!) { __type(name: $s) { name } }", { s: "A".repeat(20_000_000) }),
  ],
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

const REFUSED_CLOSE = (code: number) =>
  code === 1009 || code === 1008 || code === 1006 || (code >= 4400 && code < 4500);

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
    const ws = new WebSocket(`${server.url.replace(/^http/, "ws")}/graphql`, "graphql-transport-ws", {
      headers: { "user-agent": UA },
      maxPayload: 64 * 1024 * 1024,
    });
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
      Promise.resolve(run.afterOpen(ws, messages)).catch((err) =>
        settle({ status: `send failed: ${err}`, refused: false }),
      );
    });
    ws.on("message", (data) => {
      let m: Record<string, any>;
      try {
        m = JSON.parse(String(data));
      } catch {
        return settle({ status: "non-JSON message", refused: false, note: String(data).slice(0, 80) });
      }
      messages.push(m);
      if (run.refusal?.(m))
        return settle({
          status: `${m.type} message`,
          refused: true,
          note: JSON.stringify(m.payload ?? "").slice(0, 100),
        });
      if (run.accepted(m))
        return settle({ status: `accepted (${m.type})`, refused: false, note: JSON.stringify(m).slice(0, 100) });
    });
    ws.on("unexpected-response", (_req, res) =>
      settle({
        status: `upgrade refused ${res.statusCode}`,
        refused: (res.statusCode ?? 0) >= 400 && (res.statusCode ?? 0) < 500,
      }),
    );
    ws.on("error", () => {
      // A reset while a big frame is still being written; the close event that follows carries the code.
    });
    ws.on("close", (code, reason) =>
      settle({ status: `close ${code}`, refused: REFUSED_CLOSE(code), note: String(reason).slice(0, 80) }),
    );
  });
}

const send = (ws: WebSocket, message: unknown) =>
  new Promise<void>((res, rej) =>
    ws.send(typeof message === "string" ? message : JSON.stringify(message), (err) =>
      err && !/not opened|CLOSED|EPIPE|ECONNRESET/i.test(String(err)) ? rej(err) : res(),
    ),
  );

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
    wsAttack(
      { afterOpen: (ws) => send(ws, frame), accepted: (m) => m.type === "pong" || m.type === "connection_ack" },
      signal,
    ),
  );
});

t("WebSocket: a 5 MB frame after connection_init is refused", async () => {
  const key = keyOf();
  const frame = JSON.stringify({
    id: "1",
    type: "subscribe",
    payload: { query: "{ __typename }", variables: { pad: FIVE_MB } },
  });
  await underAttack("WS 5 MB frame after connection_init", (signal) =>
    wsAttack(
      {
        afterOpen: async (ws, messages) => (await authenticate(ws, messages, key), send(ws, frame)),
        accepted: (m) => m.type === "next" || m.type === "complete",
      },
      signal,
    ),
  );
});

t("WebSocket: connection_init without a key is closed", async () => {
  await underAttack("WS connection_init without a key", (signal) =>
    wsAttack(
      { afterOpen: (ws) => send(ws, { type: "connection_init" }), accepted: (m) => m.type === "connection_ack" },
      signal,
    ),
  );
});

t("WebSocket: connection_init with a wrong key is closed", async () => {
  await underAttack("WS connection_init with a wrong key", (signal) =>
    wsAttack(
      {
        afterOpen: (ws) =>
          send(ws, { type: "connection_init", payload: { authorization: "Bearer svc_partner_not0a0real0key000000" } }),
        accepted: (m) => m.type === "connection_ack",
      },
      signal,
    ),
  );
});

// Subscribe frames whose query is a bomb, each on a socket of its own after a good connection_init.
const SUBSCRIBE_BOMBS: Array<[title: string, name: string, query: () => string]> = [
  ["WebSocket: subscribe with 150k aliases is refused", "WS subscribe 150k aliases", () => aliasBomb(150_000)],
  ["WebSocket: subscribe with depth 1000 is refused", "WS subscribe depth 1000", () => depthBomb(1000)],
  [
    "WebSocket: subscribe with 20,000 directives is refused",
    "WS subscribe 20k directives",
    () => directiveFlood(20_000),
  ],
];
for (const [title, name, query] of SUBSCRIBE_BOMBS) {
  t(title, async () => {
    const key = keyOf();
    const frame = JSON.stringify({ id: "1", type: "subscribe", payload: { query: query() } });
    await underAttack(name, (signal) =>
      wsAttack(
        {
          afterOpen: async (ws, messages) => (await authenticate(ws, messages, key), send(ws, frame)),
          accepted: (m) => m.type === "next" || m.type === "complete",
          refusal: (m) => m.type === "error",
        },
        signal,
      ),
    );
  });
}

// ---------------------------------------------------------------------------------------------------------
// Manifests disguised as media

let partnerCount = 0;
/** A fresh account per attack (each operation allows 5 a minute per key; a 429 would hide the answer). */
async function freshPartner(): Promise<string> {
  partnerCount++;
  return newPartner(server);
}

const PASSWD_LINE = (() => {
  try {
    return readFileSync("/etc/passwd", "utf8").split("\n")[0] ?? "";
  } catch {
    return "";
  }
})();
const leaks = (bytes: Uint8Array | string) =>
  containsPasswd(bytes) ??
  (PASSWD_LINE &&
  Buffer.from(bytes as any)
    .toString("latin1")
    .includes(PASSWD_LINE)
    ? PASSWD_LINE
    : null);

/**
 * Everything the partner can read after the request: the answer, the job's status once it ends (when a job
 * was accepted), and every file they link. Returns where the passwd bytes showed up, if anywhere.
 */
async function passwdReachable(
  key: string,
  answer: string,
  statusPath: ((id: string) => string) | undefined,
): Promise<string | null> {
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
      const res = await fetch(`${server.url}/api/v1/partner${statusPath(id)}`, {
        headers: { authorization: `Bearer ${key}`, "user-agent": UA },
        signal,
      });
      const text = await res.text();
      texts.push(text);
      if (leaks(text)) return "the job status";
      if (/"status"\s*:\s*"(complete|completed|failed|error)"/.test(text) || res.status >= 400) break;
      await sleep(200);
    }
  }
  const urls = new Set<string>();
  for (const text of [answer, ...texts])
    for (const m of text.matchAll(/https?:\/\/[^"\s]+\/media\/[^"\s]+/g)) urls.add(m[0]);
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
    headers: {
      authorization: `Bearer ${key}`,
      "user-agent": UA,
      "idempotency-key": `attack-${Date.now()}-${partnerCount}`,
    },
    body: form,
    signal,
  });
  const text = await res.text();
  const followUp = () => passwdReachable(key, text, (id) => `/music-status/${id}`);
  return {
    status: String(res.status),
    refused: res.status >= 400 && res.status < 500,
    note: text.slice(0, 90),
    followUp,
  };
}

async function byUrl(
  path: string,
  field: string,
  content: string,
  signal: AbortSignal,
  statusPath?: (id: string) => string,
): Promise<Outcome> {
  const key = await freshPartner();
  const name = `/m${partnerCount}/clip.mp4`;
  files.serve(name, content, "video/mp4");
  const res = await fetch(`${server.url}/api/v1/partner${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "user-agent": UA, "content-type": "application/json" },
    body: JSON.stringify({ [field]: `${files.url}${name}` }),
    signal,
  });
  const text = await res.text();
  const followUp = () => passwdReachable(key, text, statusPath);
  return {
    status: String(res.status),
    refused: res.status >= 400 && res.status < 500,
    note: text.slice(0, 90),
    followUp,
  };
}

const manifests: Array<[string, (signal: AbortSignal) => Promise<Outcome>]> = [
  [
    "extend-music: DASH .mpd as up.mp3, BaseURL file:/etc/passwd",
    (s) => uploadToExtendMusic(dashManifest("file:/etc/passwd"), "up.mp3", s),
  ],
  [
    "extend-music: DASH .mpd as up.mp3, BaseURL a local mp4",
    (s) => uploadToExtendMusic(dashManifest(`file:${VIDEO_ON_DISK}`, "video/mp4"), "up.mp3", s),
  ],
  // The one the review found: ffmpeg 5.1 decodes a local fragmented MP4 through the manifest.
  [
    "extend-music: DASH .mpd as up.mp3, BaseURL a local fragmented m4a",
    (s) => uploadToExtendMusic(dashManifest(`file:${localM4a}`), "up.mp3", s),
  ],
  // The one the review found working on ffmpeg 5.1: a playlist of a local mp3 is two minutes of "upload".
  [
    "extend-music: HLS .m3u8 as up.mp3, a local mp3",
    (s) => uploadToExtendMusic(hlsPlaylist([AUDIO_ON_DISK]), "up.mp3", s),
  ],
  [
    "extend-music: HLS .m3u8 as up.mp3, file:/etc/passwd",
    (s) => uploadToExtendMusic(hlsPlaylist(["file:/etc/passwd"]), "up.mp3", s),
  ],
  [
    "extend-music: ffconcat as up.wav (passwd, local mp3)",
    (s) => uploadToExtendMusic(ffconcatScript(["/etc/passwd", AUDIO_ON_DISK]), "up.wav", s),
  ],
  [
    "extend-music: concat script as up.ogg",
    (s) => uploadToExtendMusic(concatScript([AUDIO_ON_DISK, "/etc/passwd"]), "up.ogg", s),
  ],
  [
    "upscale-video: DASH by URL as clip.mp4 (local mp4)",
    (s) =>
      byUrl(
        "/upscale-video",
        "video_url",
        dashManifest(`file:${VIDEO_ON_DISK}`, "video/mp4"),
        s,
        (id) => `/video-status/${id}`,
      ),
  ],
  [
    "upscale-video: HLS by URL as clip.mp4 (passwd)",
    (s) =>
      byUrl(
        "/upscale-video",
        "video_url",
        hlsPlaylist(["file:/etc/passwd", `file:${VIDEO_ON_DISK}`]),
        s,
        (id) => `/video-status/${id}`,
      ),
  ],
  [
    "remove-metadata: DASH by URL as clip.mp4 (local mp4)",
    (s) => byUrl("/remove-metadata", "video_url", dashManifest(`file:${VIDEO_ON_DISK}`, "video/mp4"), s),
  ],
  [
    "remove-metadata: ffconcat by URL as clip.mp4 (passwd)",
    (s) => byUrl("/remove-metadata", "video_url", ffconcatScript(["/etc/passwd", VIDEO_ON_DISK]), s),
  ],
];

for (const [name, attack] of manifests) {
  t(`${name}: a 4xx, and no passwd bytes anywhere reachable`, async () => {
    assert.ok(existsSync(AUDIO_ON_DISK) && existsSync(VIDEO_ON_DISK), "the media fixtures are missing");
    if (name.includes("fragmented m4a") && !localM4a) {
      recordSkipped(name, "no native ffmpeg here to make the local file");
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
  const res = await fetch(`${server.url}/api/v1/partner/me`, {
    headers: { authorization: `Bearer ${keyOf()}`, "user-agent": UA },
    signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS),
  });
  assert.is(res.status, 200);
});

t.run();
