// What the chaos test (test/chaos/chaos.test.ts) is made of: a seeded PRNG, a webhook receiver, the mixed
// load of every area, the processes it kills and starts again, and the checks of the database once it has
// settled. Kept apart from the test so the test reads as its scenario.
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { type Kysely, sql } from "kysely";
import { plugins } from "../../plugins/index.ts";
import { VOICES } from "../../plugins/voiceover/models.ts";
import type { KernelTables } from "../../storage/tables.ts";
import type { ServerProcess } from "../helpers/server.ts";
import { png } from "../omni/helpers.ts";

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** mulberry32: small, fast, and the same sequence for the same seed on every machine. */
export function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    /** An integer in [lo, hi]. */
    int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!,
    chance: (p: number) => next() < p,
  };
}
export type Rng = ReturnType<typeof prng>;

// ---------------------------------------------------------------------------------------------------------
// The webhook receiver: always 200, fast; every request kept with its bytes.

export interface Receipt {
  id: string;
  path: string;
  attempt: number;
  body: string;
}

export function receiver() {
  const got: Receipt[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      let id = "";
      try {
        id = String(JSON.parse(body).id);
      } catch {
        // not an event
      }
      got.push({ id, path: req.url ?? "", attempt: Number(req.headers["x-service-delivery-attempt"]), body });
      res.writeHead(200).end("ok");
    });
  });
  return {
    got,
    listen: () =>
      new Promise<string>((r) =>
        server.listen(0, "127.0.0.1", () => r(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
      ),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

// ---------------------------------------------------------------------------------------------------------
// HTTP with an optional Idempotency-Key; a connection that dies is an answer too (status 0).

export interface Answer {
  status: number;
  body: any;
  text: string;
}

export async function send(
  url: string,
  method: string,
  path: string,
  opts: { key?: string; body?: unknown; idem?: string; timeoutMs?: number } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { "user-agent": "mediagate-chaos-test/1.0" };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  if (opts.idem) headers["idempotency-key"] = opts.idem;
  try {
    const res = await fetch(url + path, {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal: AbortSignal.timeout(opts.timeoutMs ?? 30_000),
    });
    const text = await res.text();
    let body: any = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: res.status, body, text };
  } catch (err) {
    return { status: 0, body: null, text: String((err as Error)?.cause ?? err) };
  }
}

export const api = (path: string) => `/api/v1/partner${path}`;

// ---------------------------------------------------------------------------------------------------------
// The mixed load: one request of a random area, with inputs made before the chaos starts.

export interface Inputs {
  imageUrl: string;
  /** Two finished videos (the first with speech) for merge and captions, and the second's URL for upscale. */
  videoIds: [string, string];
  videoUrl: string;
  characterId: string;
  /** Omni videos blocked as unsafe (prompt-fixable), for prompt repair; each repaired once. */
  blocked: string[];
  hook: string;
}

export interface Request {
  area: string;
  path: string;
  body: unknown;
  /** Where its state is read, from its first answer; null when it answers at once. */
  status: ((b: any) => string[]) | null;
  /** Follow-up: an unsafe Omni video becomes a candidate for prompt repair once it has failed. */
  unsafeOmni?: boolean;
}

const script = (scenes: string[]) =>
  scenes.map((s, i) => `=== SCENE: Scene ${i + 1} ===\n${s}\n=== DIALOGUE ${i + 1} ===\nLine ${i + 1}.`).join("\n");

/** One random request; `n` makes each prompt and URL distinct. */
export function nextRequest(rng: Rng, n: number, inp: Inputs): Request {
  const fail = rng.chance(0.12) ? " [sandbox:fail]" : "";
  const cb = rng.chance(0.3) ? { callback_url: `${inp.hook}/callback` } : {};
  const choices: Array<[number, () => Request]> = [
    [
      3,
      () => ({
        area: "images",
        path: "/generate-image",
        body: { prompt: `chaos image ${n}${fail}`, model: "image-b-2" },
        status: (b) => (b.public_ids ?? []).map((id: string) => `/image-status/${id}`),
      }),
    ],
    [
      3,
      () => ({
        area: "video",
        path: "/generate-video",
        body: {
          prompt: `chaos clip ${n}${fail}`,
          model: "beta-2-direct",
          quality: "480p",
          duration: 2,
          aspect_ratio: "16:9",
          ...cb,
        },
        status: (b) => [`/video-status/${b.job_id}`],
      }),
    ],
    [
      1,
      () => ({
        area: "animation",
        path: "/generate-animation",
        body: {
          prompt: `morph ${n}${fail}`,
          start_image_base64: png([255, n % 255, 0], 32, 32),
          end_image_base64: png([0, 0, 255], 32, 32),
        },
        status: (b) => [`/video-status/${b.job_id}`],
      }),
    ],
    [2, () => ({ area: "merge", path: "/merge-videos", body: { job_ids: inp.videoIds }, status: null })],
    [
      1,
      () => ({
        area: "captions",
        path: "/captions",
        body: { video_job_id: inp.videoIds[0] },
        status: (b) => [`/captions/${b.job_id}`],
      }),
    ],
    [
      2,
      () => ({
        area: "upscale",
        path: "/upscale-image",
        body: { image_url: inp.imageUrl },
        status: (b) => [`/image-status/${b.public_id}`],
      }),
    ],
    [
      1,
      () => ({
        area: "upscale",
        path: "/upscale-video",
        body: { video_url: inp.videoUrl, upscale_factor: 2 },
        status: (b) => [`/video-status/${b.job_id}`],
      }),
    ],
    [1, () => ({ area: "metadata", path: "/remove-metadata", body: { image_url: inp.imageUrl }, status: null })],
    [
      2,
      () => ({
        area: "social",
        path: "/social-download",
        body: { url: `https://www.tiktok.com/@chaos/video/${7100000000000000000n + BigInt(n)}` },
        status: (b) => [`/social-download/${b.download_id}`],
      }),
    ],
    [
      2,
      () => ({
        area: "analysis",
        path: "/analyze",
        body: { url: `https://www.instagram.com/reel/Chaos${n}${fail ? "sandbox-fail" : ""}/` },
        status: (b) => [`/status/${b.job_id}`],
      }),
    ],
    [
      2,
      () => ({
        area: "omni",
        path: "/omni/video",
        body: { prompt: `a quiet street ${n}${fail}`, duration: 4, ...cb },
        status: (b) => [`/omni/video/${b.job_id}`],
      }),
    ],
    [
      1,
      () => ({
        area: "omni",
        path: "/omni/video",
        body: { prompt: `a knight ${n} [sandbox:unsafe] in a forest`, duration: 4, ...cb },
        status: (b) => [`/omni/video/${b.job_id}`],
        unsafeOmni: true,
      }),
    ],
    [
      2,
      () => {
        const id = inp.blocked.shift();
        if (!id)
          return {
            area: "omni",
            path: "/omni/video",
            body: { prompt: `a knight ${n} [sandbox:unsafe] on a hill`, duration: 4 },
            status: (b) => [`/omni/video/${b.job_id}`],
            unsafeOmni: true,
          };
        return {
          area: "omni-improve",
          path: "/omni/improve-prompt",
          body: { job_id: id },
          status: (b) => (b?.job_id ? [`/omni/video/${b.job_id}`] : []),
        };
      },
    ],
    [
      1,
      () => ({
        area: "omni-script",
        path: "/omni/script-runner",
        body: {
          character_id: inp.characterId,
          sections: [
            { content: `Hero: "One ${n}."${fail}`, duration: 4 },
            { content: 'Hero: "Two."', duration: 4 },
          ],
        },
        status: (b) => [`/omni/script-runner/${b.batch_id}`],
      }),
    ],
    [
      1,
      () => ({
        area: "script-runner",
        path: "/script-runner",
        body: {
          prompt: script([`A harbour ${n}.${fail}`, "Calm sea."]),
          character_image_base64: png([200, 40, 40], 32, 32),
        },
        status: (b) => [`/script-runner/${b.job_id}`],
      }),
    ],
    [
      3,
      () => ({
        area: "voiceover",
        path: "/generate-voiceover",
        body: { text: `Chaos line ${n}.${fail}`, voice_id: VOICES[n % VOICES.length]!.voice_id },
        status: null,
      }),
    ],
    // Weight 1: a sandbox song is two 30-45 s arrangements synthesized and encoded for real, seconds of CPU
    // each, and a worker runs two at a time; more of them measure the render's queue, not the recovery.
    [
      1,
      () => ({
        area: "music",
        path: "/generate-music",
        body: { prompt: `lofi beats ${n}${fail}` },
        status: (b) => [`/music-status/${b.job_id}`],
      }),
    ],
  ];
  const total = choices.reduce((s, [w]) => s + w, 0);
  let r = rng.next() * total;
  for (const [w, make] of choices) {
    if ((r -= w) < 0) return make();
  }
  return choices[0]![1]();
}

/** A status body that will not change again. */
export const TERMINAL = new Set(["complete", "completed", "success", "partial", "failed", "error", "no_speech"]);
export const isTerminal = (b: any) => b && typeof b === "object" && TERMINAL.has(String(b.status ?? b.state ?? ""));

// ---------------------------------------------------------------------------------------------------------
// The checks, on the database once every process has stopped.

export interface Violation {
  kind: string;
  detail: string;
}

/** Terminal states by `plugin/kind`, and which kinds emit events, from the plugins' own declarations. */
function declarations() {
  const terminal = new Map<string, Readonly<Record<string, "success" | "failure">>>();
  const events = new Map<string, { success?: string; failure?: string }>();
  for (const p of plugins as any[]) {
    for (const [kind, decl] of Object.entries<any>(p.jobs ?? {})) {
      terminal.set(`${p.name}/${kind}`, decl.terminal);
      if (decl.events) events.set(`${p.name}/${kind}`, { success: decl.events.success, failure: decl.events.failure });
    }
  }
  return { terminal, events };
}

export interface DbFacts {
  unansweredKeys: string[];
  lateEvents: string[];
  jobs: Array<{
    id: string;
    plugin: string;
    kind: string;
    state: string;
    credits_used: number;
    credits_refunded: number;
    holds_inflight_slot: boolean;
    created_at: Date;
    finished_at: Date | null;
    callback_url: string | null;
    partner_id: string;
    error: string | null;
  }>;
  outcome: Map<string, "success" | "failure" | "open">;
  /** Jobs still open after the window that a queue job or a lease will still end (not stuck). */
  ownedOpen: string[];
}

/**
 * `stoppedAt`: when the test began stopping the processes. An event made after it (a job ended by the
 * shutdown itself) waits for the next start to be sent: counted in `lateEvents`, not a violation.
 */
export async function checkDatabase(
  db: Kysely<KernelTables>,
  receipts: Receipt[],
  violations: Violation[],
  stoppedAt = Infinity,
): Promise<DbFacts> {
  const v = (kind: string, detail: string) => violations.push({ kind, detail });
  const ownedOpen: string[] = [];
  const { terminal, events } = declarations();
  const jobs = (await db
    .selectFrom("jobs")
    .select([
      "id",
      "plugin",
      "kind",
      "state",
      "credits_used",
      "credits_refunded",
      "holds_inflight_slot",
      "created_at",
      "finished_at",
      "callback_url",
      "partner_id",
      "error",
    ])
    .execute()) as DbFacts["jobs"];
  const ledger = await db.selectFrom("ledger").selectAll().execute();
  const refunds = new Map<string, typeof ledger>();
  for (const e of ledger) {
    if (e.type !== "refund" || !e.job_id) continue;
    refunds.set(e.job_id, [...(refunds.get(e.job_id) ?? []), e]);
  }
  // Who will still end an open job: a queue job of it waiting, retrying or running (its attempts, its polls,
  // its dead letter), or its lease (a synchronous job: an expired one is recovered at the next start).
  const owned = new Set<string>();
  const queued = await sql<{
    job_id: string;
  }>`select distinct data->>'jobId' as job_id from pgboss.job where state in ('created', 'retry', 'active')`.execute(
    db,
  );
  for (const r of queued.rows) if (r.job_id) owned.add(r.job_id);
  const leased = await db.selectFrom("leases").select("key").where("key", "like", "job:%").execute();
  for (const r of leased) owned.add(r.key.slice("job:".length));
  const outcome = new Map<string, "success" | "failure" | "open">();
  for (const j of jobs) {
    const where = `${j.id} ${j.plugin}/${j.kind} state=${j.state}`;
    if (j.finished_at === null) {
      outcome.set(j.id, "open");
      // Orphaned: nothing will ever end it (stuck for good). Owned but open: its retries' back-off (2 s
      // doubling to 60 s, every kill and terminated connection it met adds a step) outlasted the window on a
      // loaded machine; counted and printed, not a violation.
      if (owned.has(j.id)) ownedOpen.push(`${where} charged ${j.credits_used}`);
      else v("job_unfinished", `${where} charged ${j.credits_used}, and nothing owns it (no queue job, no lease)`);
    }
    if (j.holds_inflight_slot && !(j.finished_at === null && owned.has(j.id))) v("slot_held", where);
    const rows = refunds.get(j.id) ?? [];
    const parts = rows.map((r) => r.part ?? "whole");
    if (new Set(parts).size !== parts.length) v("refund_duplicate", `${where}: refund rows ${JSON.stringify(parts)}`);
    const refunded = rows.reduce((s, r) => s + Number(r.amount), 0);
    if (refunded !== Number(j.credits_refunded))
      v("refund_mismatch", `${where}: ledger refunds ${refunded}, job says ${j.credits_refunded}`);
    if (j.finished_at === null) continue;
    const meaning =
      terminal.get(`${j.plugin}/${j.kind}`)?.[j.state] ??
      (/fail|error|no_speech/.test(j.state) ? "failure" : "success");
    outcome.set(j.id, meaning);
    if (meaning === "failure" && Number(j.credits_refunded) !== Number(j.credits_used))
      v("failed_not_refunded", `${where}: used ${j.credits_used}, refunded ${j.credits_refunded}`);
    // A success may have given back refundable shares (a run's failed scenes), never the whole charge's row.
    if (meaning === "success" && rows.some((r) => r.part === null))
      v("success_refunded", `${where}: a whole-job refund row on a success`);
  }
  const balances = await db
    .selectFrom("partners")
    .select([
      "id",
      "credits_remaining",
      sql<number>`(select coalesce(sum(amount), 0) from ledger l where l.partner_id = partners.id)`.as("sum"),
    ])
    .execute();
  for (const p of balances)
    if (Number(p.credits_remaining) !== Number(p.sum))
      v("balance_not_ledger", `${p.id}: balance ${p.credits_remaining}, ledger ${p.sum}`);

  // A key whose request died may keep a row without an answer: its retries answer its job as a replay (checked
  // over HTTP by the test). Counted for the figures only.
  const keys = await db.selectFrom("idempotency_keys").selectAll().execute();
  const unansweredKeys = keys
    .filter((k) => k.status === null)
    .map((k) => `${k.key} ${k.endpoint} job ${k.job_id ?? "none"}`);

  // Webhooks: every event stored reached the receiver, every copy the stored bytes; each record delivered,
  // counting at least the requests the receiver saw; every finished job of a kind with events has its event.
  const stored = await db.selectFrom("webhook_events").selectAll().execute();
  const deliveries = await db.selectFrom("webhook_deliveries").selectAll().execute();
  const byEvent = new Map<string, Receipt[]>();
  for (const r of receipts) byEvent.set(r.id, [...(byEvent.get(r.id) ?? []), r]);
  const late = new Set(stored.filter((e) => new Date(e.created_at).getTime() >= stoppedAt).map((e) => e.id));
  for (const e of stored) {
    if (late.has(e.id)) continue;
    const copies = byEvent.get(e.id) ?? [];
    if (!copies.length) v("webhook_missing", `${e.id} ${e.event} job ${e.job_id}`);
    if (copies.some((c) => c.body !== e.body))
      v("webhook_bytes", `${e.id} ${e.event}: ${new Set(copies.map((c) => c.body)).size} different bodies`);
  }
  for (const d of deliveries) {
    if (late.has(d.event_id)) continue;
    const seen = (byEvent.get(d.event_id) ?? []).filter((c) => d.url.endsWith(c.path)).length;
    if (d.status !== "delivered")
      v(
        "webhook_undelivered",
        `${d.event_id} job ${d.job_id}: ${d.status} after ${d.attempt} attempts (${d.last_error ?? ""})`,
      );
    if (seen > Number(d.attempt))
      v(
        "webhook_attempts_lost",
        `${d.event_id} job ${d.job_id}: ${seen} requests received, record counts ${d.attempt}`,
      );
  }
  const withEvent = new Set(stored.map((e) => e.job_id));
  for (const j of jobs) {
    const o = outcome.get(j.id);
    if (o !== "success" && o !== "failure") continue;
    const ev = events.get(`${j.plugin}/${j.kind}`);
    if (ev?.[o] && !withEvent.has(j.id))
      v("webhook_no_event", `${j.id} ${j.plugin}/${j.kind} ${j.state}${j.callback_url ? " (callback_url)" : ""}`);
  }
  return { jobs, outcome, unansweredKeys, lateEvents: [...late], ownedOpen };
}

/** From a kill to the moment every job open at the kill had ended (null: one never did). */
export function recoveryTimes(kills: number[], jobs: DbFacts["jobs"]): Array<number | null> {
  return kills.map((t) => {
    let worst = 0;
    for (const j of jobs) {
      if (new Date(j.created_at).getTime() > t) continue;
      if (j.finished_at === null) return null;
      const end = new Date(j.finished_at).getTime();
      if (end > t) worst = Math.max(worst, end - t);
    }
    return worst;
  });
}

export function percentile(xs: number[], p: number): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}

/** A small fixed-width table. */
export function table(title: string, rows: Array<[string, string | number]>): string {
  const w = Math.max(...rows.map(([k]) => k.length), 10);
  return [`${title}`, ...rows.map(([k, val]) => `  ${k.padEnd(w)}  ${val}`)].join("\n");
}

export type { ServerProcess };
