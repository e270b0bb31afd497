// The harness of the real-server attack files (test/security/attacks-*.test.ts): the server (main.ts) in a
// process of its own, so its event loop is not the test's; a partner to attack with; and `underAttack`, which
// runs one attack while /healthz is polled on fresh connections and the server's process group (ffmpeg
// children included) is sampled for RSS. The worst /healthz answer and the peak RSS are recorded and printed
// as a table when the file ends: they are measurements to report, not assertions (a loaded CI machine makes
// any latency bound flaky). Asserted: the attack was refused (a 4xx, a close, a protocol error) within
// ANSWER_TIMEOUT_MS, /healthz answered throughout and answers afterwards.

import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, get as httpGet } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { type ServerProcess, startServer } from "../helpers/server.ts";

/** An attack (or a /healthz poll) still unanswered after this long has not answered at all. */
export const ANSWER_TIMEOUT_MS = 60_000;
/** Between attacks: how long the server may take to come back before the next attack is measured. */
const RECOVERY_TIMEOUT_MS = 120_000;
const HEALTH_INTERVAL_MS = 50;
const RSS_INTERVAL_MS = 100;
export const UA = "mediagate-attack-corpus/2.0";
const PARTNER_BASE = "/api/v1/partner";
const ADMIN_BASE = "/api/v1/admin";

export interface AttackServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  pid: number;
  adminToken: string;
  output(): string;
  /** Stops the server and removes its data directory. */
  stop(): Promise<void>;
  /** The child process, for tests that need more (kill, exited). */
  process: ServerProcess;
}

export interface Outcome {
  /** An HTTP status, or for a socket `closed` / `close <code>` / `error <message>`. */
  status: string;
  /** A 4xx, a close, or the protocol's error: the server turned the attack away. */
  refused: boolean;
  note?: string;
  /**
   * Run after the measurement, on its own time: where something the partner must never read can be read (a
   * file of the server's disk in the answer, the job's status or a file it links), or null. Kept out of the
   * attack so a job's run is not the answer's time.
   */
  followUp?: () => Promise<string | null>;
}

interface Row {
  attack: string;
  status: string;
  worstMs: number;
  polls: number;
  peakRssMb: number;
  note: string;
}

const rows: Row[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** main.ts in a child process on a fresh embedded database, with an admin token to make partners with. */
export async function startAttackServer(env: Record<string, string> = {}): Promise<AttackServer> {
  const dataDir = mkdtempSync(join(tmpdir(), "mediagate-attack-"));
  const adminToken = env.ADMIN_TOKEN ?? "q7Vx2mLp9RtW4nZc8KjH3sDf6GbY1aEu";
  const proc = await startServer({ DATA_DIR: dataDir, LOG_LEVEL: "warn", ...env, ADMIN_TOKEN: adminToken }, 120_000);
  return {
    url: proc.url,
    pid: proc.pid,
    adminToken,
    output: () => proc.output(),
    process: proc,
    async stop() {
      await proc.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

let partners = 0;

/** A new partner with `credits`; returns its API key. */
export async function freshPartner(srv: AttackServer, credits = 100_000): Promise<string> {
  const res = await fetch(`${srv.url}${ADMIN_BASE}/partners`, {
    method: "POST",
    headers: { authorization: `Bearer ${srv.adminToken}`, "content-type": "application/json", "user-agent": UA },
    body: JSON.stringify({ name: `Attacker ${++partners}`, credits }),
  });
  const body = (await res.json()) as { api_key?: string };
  if (res.status !== 201 || !body.api_key)
    throw new Error(`admin create partner: ${res.status} ${JSON.stringify(body)}`);
  return body.api_key;
}

/** The partner's balance, as `GET /credits` tells it. */
export async function creditsOf(srv: AttackServer, key: string): Promise<number> {
  const res = await fetch(`${srv.url}${PARTNER_BASE}/credits`, {
    headers: { authorization: `Bearer ${key}`, "user-agent": UA },
  });
  const body = (await res.json()) as { credits_remaining?: number };
  if (res.status !== 200 || typeof body.credits_remaining !== "number")
    throw new Error(`GET /credits: ${res.status} ${JSON.stringify(body)}`);
  return body.credits_remaining;
}

/** Resident memory of every process in `pid`'s process group (the server and the children it spawned), in MB. */
export function groupRssMb(pid: number): number {
  let kb = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so read after the last ")".
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) !== pid) continue;
      const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${entry}/status`, "utf8"));
      if (rss) kb += Number(rss[1]);
    } catch {
      // the process ended between the listing and the read
    }
  }
  return Math.round(kb / 1024);
}

/**
 * One GET /healthz on a connection of its own (no keep-alive: a pooled socket the server is just closing
 * would fail the poll for a reason that is not the server's responsiveness).
 */
export function healthzOnce(
  url: string,
  timeoutMs = ANSWER_TIMEOUT_MS,
): Promise<{ ok: boolean; ms: number; error?: string }> {
  const started = performance.now();
  const ms = () => Math.round(performance.now() - started);
  return new Promise((done) => {
    const req = httpGet(`${url}/healthz`, { agent: false, headers: { "user-agent": UA } }, (res) => {
      res.resume();
      res.on("end", () =>
        done({
          ok: res.statusCode === 200,
          ms: ms(),
          ...(res.statusCode === 200 ? {} : { error: `HTTP ${res.statusCode}` }),
        }),
      );
      res.on("error", (err) => done({ ok: false, ms: ms(), error: String(err) }));
    });
    req.setTimeout(timeoutMs, () => {
      req.destroy();
      done({ ok: false, ms: ms(), error: `no answer in ${timeoutMs} ms` });
    });
    req.on("error", (err) => done({ ok: false, ms: ms(), error: String(err) }));
  });
}

function pollHealth(url: string) {
  let running = true;
  let worst = 0;
  let polls = 0;
  const failures: string[] = [];
  const loop = (async () => {
    while (running) {
      let r = await healthzOnce(url);
      // A 408 is the server's header time-out judging this one connection: with the attacks' 2 s limit, a CI
      // machine that stalls the server's process longer than that between accepting the probe and reading it
      // gets one (Node's checking timer runs before the read; seen once in a loaded CI run, never alone). The
      // probe asks again at once; a server that no longer serves fails the second ask too.
      if (r.error === "HTTP 408") r = await healthzOnce(url);
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

function sampleRss(pid: number) {
  let peak = groupRssMb(pid);
  const timer = setInterval(() => (peak = Math.max(peak, groupRssMb(pid))), RSS_INTERVAL_MS);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, groupRssMb(pid));
    },
  };
}

async function waitUntilHealthy(url: string): Promise<void> {
  const until = Date.now() + RECOVERY_TIMEOUT_MS;
  while (Date.now() < until) {
    if ((await healthzOnce(url, 5_000)).ok) return;
    await sleep(250);
  }
  throw new Error(`the server did not answer /healthz within ${RECOVERY_TIMEOUT_MS} ms`);
}

/**
 * Runs one attack with /healthz polled and RSS sampled meanwhile; records the row; asserts the attack was
 * refused within the time-out, /healthz answered throughout, and the server answers afterwards. Build the
 * payload before calling: its making is not the server's time.
 */
export async function underAttack(
  srv: AttackServer,
  name: string,
  attack: (signal: AbortSignal) => Promise<Outcome>,
): Promise<Outcome> {
  await waitUntilHealthy(srv.url); // the last attack's aftermath is not this one's
  const controller = new AbortController();
  const poll = pollHealth(srv.url);
  const rss = sampleRss(srv.pid);
  let outcome: Outcome | undefined;
  let error: unknown;
  let timer: NodeJS.Timeout | undefined;
  try {
    outcome = await Promise.race([
      attack(controller.signal),
      new Promise<never>(
        (_, reject) =>
          (timer = setTimeout(() => reject(new Error(`no answer in ${ANSWER_TIMEOUT_MS} ms`)), ANSWER_TIMEOUT_MS)),
      ),
    ]);
  } catch (err) {
    error = err;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  const health = await poll.stop();
  const peakRssMb = rss.stop();
  const after = await healthzOnce(srv.url);
  const leak = outcome?.followUp ? await outcome.followUp().catch((err) => `(the check failed: ${err})`) : null;
  const status = outcome?.status ?? `no answer (${(error as Error)?.message ?? error})`;
  const notes = [
    outcome?.note,
    leak ? `readable in ${leak}` : "",
    health.failures.length ? `/healthz failed ${health.failures.length}x: ${health.failures[0]}` : "",
    after.ok ? "" : `/healthz after: ${after.error}`,
  ];
  rows.push({
    attack: name,
    status,
    worstMs: health.worst,
    polls: health.polls,
    peakRssMb,
    note: notes.filter(Boolean).join("; "),
  });
  assert.ok(outcome, `${name}: ${status}`);
  assert.is(leak, null, `${name}: what the partner must not read is in ${leak}`);
  assert.ok(
    outcome!.refused,
    `${name}: expected a 4xx, a close or a protocol error, got ${status}${outcome!.note ? ` (${outcome!.note})` : ""}`,
  );
  assert.equal(
    health.failures,
    [],
    `${name}: /healthz did not answer within ${ANSWER_TIMEOUT_MS} ms while under attack`,
  );
  assert.ok(after.ok, `${name}: /healthz after the attack: ${after.error}`);
  return outcome!;
}

/** An HTTP answer as an Outcome: refused when it is a 4xx; the body's `error` (or its start) as the note. */
export async function httpOutcome(res: Response): Promise<Outcome> {
  const text = await res.text();
  let note = text.slice(0, 100).replace(/\s+/g, " ");
  try {
    const parsed = JSON.parse(text) as { error?: unknown };
    if (typeof parsed?.error === "string") note = parsed.error.slice(0, 100);
  } catch {
    // not JSON: the start of the text is the note
  }
  return { status: String(res.status), refused: res.status >= 400 && res.status < 500, note };
}

/** A row for an attack this machine cannot make (a tool it lacks), with why. */
export function recordSkipped(name: string, why: string): void {
  rows.push({ attack: name, status: "skipped", worstMs: 0, polls: 0, peakRssMb: 0, note: why });
}

/** Prints the file's table (attack, status, worst /healthz, peak RSS); call it in the suite's `after`. */
export function printAttackTable(): void {
  if (!rows.length) return;
  const width = Math.max(6, ...rows.map((r) => r.attack.length));
  const sw = Math.max(6, ...rows.map((r) => r.status.length));
  console.log(
    [
      "",
      `${"attack".padEnd(width)}  ${"status".padEnd(sw)}  worst /healthz ms  (polls)  peak RSS MB  note`,
      ...rows.map(
        (r) =>
          `${r.attack.padEnd(width)}  ${r.status.padEnd(sw)}  ${String(r.worstMs).padStart(17)}  ${`(${r.polls})`.padStart(7)}  ${String(r.peakRssMb).padStart(11)}  ${r.note}`,
      ),
    ].join("\n"),
  );
  rows.length = 0;
}

/** A partner's file host on loopback (set ALLOW_PRIVATE_URLS=1 on the server to let it fetch from here). */
export async function fileHost(): Promise<{
  url: string;
  serve(path: string, body: Buffer | string, type?: string): void;
  close(): Promise<void>;
}> {
  const served = new Map<string, { body: Buffer | string; type: string }>();
  const server = createServer((req, res) => {
    const file = served.get(req.url ?? "");
    if (!file) return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": file.type, "content-length": Buffer.byteLength(file.body) }).end(file.body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    serve: (path, body, type = "application/octet-stream") => void served.set(path, { body, type }),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A POST to the partner API as `key` (the attack files' one way of sending a payload). */
export function partnerPost(
  srv: AttackServer,
  key: string,
  path: string,
  body: Buffer | string,
  type: string,
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(`${srv.url}${PARTNER_BASE}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": type, "user-agent": UA },
    body: body as unknown as BodyInit,
    signal,
  });
}

/**
 * One attack by a partner of its own (the endpoints' per-key limits are not what is measured), run by
 * `underAttack`; asserts the partner's balance is what it was before. Returns the outcome for further checks.
 */
export async function unchargedAttack(
  srv: AttackServer,
  name: string,
  attack: (key: string, signal: AbortSignal) => Promise<Response>,
): Promise<Outcome> {
  const key = await freshPartner(srv);
  const before = await creditsOf(srv, key);
  const outcome = await underAttack(srv, name, async (signal) => httpOutcome(await attack(key, signal)));
  assert.is(await creditsOf(srv, key), before, `${name}: credits unchanged`);
  return outcome;
}

/**
 * A suite against one attack server (started before its tests with `env`, stopped after them, the table
 * printed): `server()` is the running server. `setUp` / `tearDown` run after the start and before the stop.
 */
export function attackSuite(
  title: string,
  env: Record<string, string> = {},
  hooks: { setUp?: (srv: AttackServer) => Promise<void>; tearDown?: () => Promise<void> } = {},
) {
  const t = suite(title);
  let srv: AttackServer | undefined;
  t.before(async () => {
    srv = await startAttackServer(env);
    await hooks.setUp?.(srv);
  });
  t.after(async () => {
    printAttackTable();
    await hooks.tearDown?.();
    await srv?.stop();
  });
  const server = () => {
    if (!srv) throw new Error("the attack server is not started");
    return srv;
  };
  return { t, server };
}
