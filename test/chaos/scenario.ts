// The chaos test (issue 46, deliverable 7), run by chaos-pglite.test.ts and chaos-postgres.test.ts: a mixed load of every area from a seeded PRNG, through real
// processes that are SIGKILLed at random and started again after a short random delay, and on Postgres
// backends of the test's own database terminated at random (pg_terminate_backend); then a bounded recovery
// window, and the checks: no job unfinished, no Idempotency-Key locked (each keyed request sent again answers
// a replay, never 409 "still being processed"), no in-flight slot held, every balance its ledger's sum, each
// failed job refunded exactly once (a success refunds at most its refundable shares), every webhook event
// received, its copies byte for byte the stored event, each record counting at least the requests it made.
//
// PGlite: one ROLE=all process on a DATA_DIR, killed and restarted. Postgres: two ROLE=api and two
// ROLE=worker processes on one throwaway database sharing one DATA_DIR (one host's files), any of them killed.
//
//   CHAOS_SEED     replays a run's decisions (printed at the start; the timing of a loaded machine still varies)
//   CHAOS_SECONDS  seconds of load and chaos per backend (default 60)
//   CHAOS_RECOVERY_SECONDS  the longest recovery window after the load (default 240; it ends as soon as all
//                  is settled, which after a run of kills took 40-100 s, and longer in a loaded CI run where
//                  the last music renders queue behind each other)
//
// It prints a table per backend: kills (api/worker), terminations, jobs by area and by final state,
// violations by kind, and the recovery time after a kill (from the kill to the moment every job open at the
// kill had ended, from the jobs' own created_at/finished_at), p50 and max.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import pgLib from "pg";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { RATE_LIMITS } from "../../core/rate-limits.ts";
import { openDatabase } from "../../storage/db.ts";
import { type DatabaseBackend, databaseBackends, isolatedPostgresDatabase, postgresUrl } from "../helpers/backends.ts";
import { type ServerProcess, startServer } from "../helpers/server.ts";
import { SPEAKING_CLIP } from "../helpers/speaking-clip.ts";
import { png } from "../omni/helpers.ts";
import {
  type Answer,
  api,
  checkDatabase,
  type Inputs,
  isTerminal,
  nextRequest,
  percentile,
  prng,
  type Request,
  receiver,
  recoveryTimes,
  send,
  sleep,
  table,
  type Violation,
} from "./harness.ts";

const ADMIN_TOKEN = "adm_c7Hq2LzR9wXk4PtN8vJm3BsY6dFg5QaW1eUo0iTr";
const PUBLIC_URL = "https://media.example.test";
const CREDITS = 1_000_000;
const SEED = process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) : Math.floor(Math.random() * 2 ** 31);
const LOAD_MS = Number(process.env.CHAOS_SECONDS ?? 60) * 1000;
const RECOVERY_MS = Number(process.env.CHAOS_RECOVERY_SECONDS ?? 240) * 1000;
const CLIENTS = 3;

interface Slot {
  role: "all" | "api" | "worker";
  dir: string;
  proc: ServerProcess | null;
  /** Set while we kill it on purpose: any other exit is a violation. */
  killing: boolean;
  restarting: Promise<void> | null;
}

interface Sent {
  req: Request;
  idem: string | null;
  first: Answer;
  /** Status paths still followed, and the last status body of each. */
  paths: string[];
}

/** Defines and runs the chaos suite on one backend (each backend is its own test file, so the two run in parallel). */
export async function runChaos(only: DatabaseBackend["name"]): Promise<void> {
  for (const backend of (await databaseBackends()).filter((b) => b.name === only)) {
    const t = suite(`chaos on ${backend.name}`);
    const dirs: string[] = [];
    const slots: Slot[] = [];
    t.after(async () => {
      for (const s of slots) await s.proc?.kill();
      for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
    });

    t(
      "kills and terminated connections under a mixed load: nothing stuck, locked, held, lost or refunded twice",
      async () => {
        const seed = SEED + (backend.name === "postgres" ? 1 : 0);
        console.log(
          `chaos on ${backend.name}: CHAOS_SEED=${SEED} (this backend's seed ${seed}), ${LOAD_MS / 1000} s of load, ${RECOVERY_MS / 1000} s to recover`,
        );
        const testStart = Date.now();
        const violations: Violation[] = [];
        const v = (kind: string, detail: string) => violations.push({ kind, detail });
        const rcv = receiver();
        const hook = await rcv.listen();
        const databaseUrl = backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined;
        const dataDir = mkdtempSync(join(tmpdir(), "mediagate-chaos-"));
        dirs.push(dataDir);
        const common: Record<string, string> = {
          ADMIN_TOKEN,
          PUBLIC_URL,
          DATA_DIR: dataDir,
          ALLOW_PRIVATE_URLS: "1",
          WEBHOOK_RETRY_DELAYS: "1,1,2,2,2",
          // Long enough that kills land while attempts and synchronous requests are running.
          SANDBOX_LATENCY_MS: "1500",
          LOG_LEVEL: "warn",
          ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
        };
        const roles: Slot["role"][] = databaseUrl ? ["api", "api", "worker", "worker"] : ["all"];
        for (const role of roles) slots.push({ role, dir: dataDir, proc: null, killing: false, restarting: null });
        const kills: Array<{ role: string; at: number }> = [];
        let terminations = 0;
        let restartFailures = 0;

        const start = async (slot: Slot) => {
          for (let tries = 0; ; tries++) {
            try {
              const proc = await startServer({ ...common, ROLE: slot.role }, 120_000);
              slot.proc = proc;
              slot.killing = false;
              void proc.exited.then((e) => {
                if (slot.proc !== proc) return;
                if (!slot.killing) {
                  v(
                    "process_exit",
                    `${slot.role} pid ${proc.pid} exited by itself (${JSON.stringify(e)}): ${proc.output().slice(-1500)}`,
                  );
                  slot.proc = null;
                  slot.restarting ??= start(slot)
                    .catch(() => {}) // recorded as restart_failed
                    .finally(() => (slot.restarting = null));
                }
              });
              return;
            } catch (err) {
              restartFailures++;
              v("restart_failed", `${slot.role}: ${String(err).slice(0, 1500)}`);
              if (tries >= 2) throw err;
              await sleep(1000);
            }
          }
        };
        // The first migrates the database; the others find it done.
        await start(slots[0]!);
        await Promise.all(slots.slice(1).map(start));
        const apis = () =>
          slots.filter((s) => (s.role === "api" || s.role === "all") && s.proc && !s.killing).map((s) => s.proc!);
        /** Sends through a live API; waits (bounded) for one to be up. */
        const through = async (method: string, path: string, opts: Parameters<typeof send>[3] = {}) => {
          for (let i = 0; i < 600; i++) {
            const up = apis();
            if (up.length) return send(up[Math.floor(Math.random() * up.length)]!.url, method, path, opts);
            await sleep(100);
          }
          return send("http://127.0.0.1:1", method, path, opts);
        };

        const bootMs = Date.now() - testStart;
        const created = await through("POST", "/api/v1/admin/partners", {
          key: ADMIN_TOKEN,
          body: { name: "Chaos", credits: CREDITS },
        });
        assert.is(created.status, 201, created.text);
        const { partner_id: partnerId, api_key: key } = created.body;
        const limits = {
          inflight_jobs: 40,
          caption_jobs: 40,
          rate_limits: Object.fromEntries(Object.keys(RATE_LIMITS).map((row) => [row, 100_000])),
        };
        assert.is(
          (await through("PATCH", `/api/v1/admin/partners/${partnerId}`, { key: ADMIN_TOKEN, body: { limits } }))
            .status,
          200,
        );
        assert.is((await through("POST", api("/webhook"), { key, body: { url: `${hook}/account` } })).status, 200);

        // Inputs made before the chaos: an image, a video with speech and a silent one, a character, a blocked clip.
        const waitEnd = async (path: string) => {
          for (const end = Date.now() + 120_000; Date.now() < end; await sleep(300)) {
            const r = await through("GET", api(path), { key });
            if (r.status === 200 && isTerminal(r.body)) return r.body;
          }
          throw new Error(`${path} did not end`);
        };
        const [img, talking, silent, hero, blocked] = await Promise.all([
          through("POST", api("/generate-image"), {
            key,
            body: { prompt: "a lighthouse at dusk", model: "image-b-2" },
          }),
          through("POST", api("/generate-video"), { key, body: SPEAKING_CLIP }),
          through("POST", api("/generate-video"), {
            key,
            body: {
              prompt: "a quiet harbour",
              model: "beta-2-direct",
              quality: "480p",
              duration: 2,
              aspect_ratio: "16:9",
            },
          }),
          through("POST", api("/omni/characters"), { key, body: { name: "Hero", image_base64: png([30, 120, 220]) } }),
          through("POST", api("/omni/video"), {
            key,
            body: { prompt: "a knight [sandbox:unsafe] at the gate", duration: 4 },
          }),
        ]);
        for (const r of [img, talking, silent, blocked]) assert.is(r.status, 202, r.text);
        assert.is(hero.status, 201, hero.text);
        const [imgEnd, , silentEnd, blockedEnd] = await Promise.all([
          waitEnd(`/image-status/${img.body.public_ids[0]}`),
          waitEnd(`/video-status/${talking.body.job_id}`),
          waitEnd(`/video-status/${silent.body.job_id}`),
          waitEnd(`/omni/video/${blocked.body.job_id}`),
        ]);
        assert.is(blockedEnd.status, "error", JSON.stringify(blockedEnd));
        const inputs: Inputs = {
          imageUrl: imgEnd.image_url,
          videoIds: [talking.body.job_id, silent.body.job_id],
          videoUrl: silentEnd.video_url,
          characterId: hero.body.character_id,
          blocked: [blocked.body.job_id],
          hook,
        };

        // ---- the load and the chaos --------------------------------------------------------------------------
        const sent: Sent[] = [];
        const loadStart = Date.now();
        const loadEnd = loadStart + LOAD_MS;
        let n = 0;
        const unsafe = new Set<string>();
        const client = async (i: number) => {
          const rng = prng(seed * 31 + i);
          while (Date.now() < loadEnd) {
            const req = nextRequest(rng, ++n, inputs);
            const idem = rng.chance(0.35) ? `chaos-${seed}-${i}-${n}` : null;
            const first = await through("POST", api(req.path), { key, body: req.body, idem: idem ?? undefined });
            const paths =
              first.status >= 200 && first.status < 300 && req.status
                ? req.status(first.body).filter((p) => !p.includes("undefined"))
                : [];
            if (req.unsafeOmni) for (const p of paths) unsafe.add(p);
            sent.push({ req, idem, first, paths });
            await sleep(rng.int(50, 400));
          }
        };
        const pgAdmin = databaseUrl ? new pgLib.Client({ connectionString: await postgresUrl() }) : null;
        await pgAdmin?.connect();
        const dbName = databaseUrl ? new URL(databaseUrl).pathname.slice(1) : "";
        const chaos = async () => {
          const rng = prng(seed * 31 + 100);
          const restarts: Promise<void>[] = [];
          while (Date.now() < loadEnd) {
            await sleep(rng.int(2500, 7000));
            if (Date.now() >= loadEnd) break;
            if (pgAdmin && rng.chance(0.4)) {
              const { rows } = await pgAdmin.query(
                "select pid from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()",
                [dbName],
              );
              const victims = rows.filter(() => rng.chance(0.35)).slice(0, 4);
              for (const r of victims) {
                await pgAdmin.query("select pg_terminate_backend($1)", [r.pid]);
                terminations++;
              }
              continue;
            }
            const up = slots.filter((s) => s.proc && !s.killing && !s.restarting);
            if (!up.length) continue;
            const slot = rng.pick(up);
            slot.killing = true;
            kills.push({ role: slot.role, at: Date.now() });
            await slot.proc!.kill();
            slot.proc = null;
            const delay = rng.int(200, 2500);
            slot.restarting = sleep(delay)
              .then(() => start(slot))
              .finally(() => (slot.restarting = null));
            restarts.push(slot.restarting);
          }
          await Promise.allSettled(restarts);
        };
        // Follows the jobs' states, and hands failed unsafe clips to prompt repair.
        let following = true;
        const follow = async () => {
          while (following) {
            for (const p of [...unsafe].slice(0, 10)) {
              const r = await through("GET", api(p), { key });
              if (r.status === 200 && isTerminal(r.body)) {
                unsafe.delete(p);
                if (r.body.status === "error") inputs.blocked.push(p.split("/").pop()!);
              }
            }
            await sleep(1000);
          }
        };
        const follower = follow();
        await Promise.all([chaos(), ...Array.from({ length: CLIENTS }, (_, i) => client(i))]);
        for (const s of slots) await s.restarting;
        for (const s of slots) if (!s.proc) await start(s);
        const recoveryStart = Date.now();

        // ---- recovery window: every followed job ended and, where we can see it, the database settled -----------
        const open = new Set(sent.flatMap((s) => s.paths));
        const db = databaseUrl ? await openDatabase({ url: databaseUrl }) : null;
        let settled = false;
        while (Date.now() - recoveryStart < RECOVERY_MS) {
          for (const p of [...open]) {
            const r = await through("GET", api(p), { key });
            if (r.status === 200 && isTerminal(r.body)) open.delete(p);
          }
          let dbOpen = 0;
          if (db) {
            const row = await db.kysely
              .selectFrom("jobs")
              .select((eb) => eb.fn.countAll<number>().as("n"))
              .where((eb) => eb.or([eb("finished_at", "is", null), eb("holds_inflight_slot", "=", true)]))
              .executeTakeFirstOrThrow();
            const pending = await db.kysely
              .selectFrom("webhook_deliveries")
              .select((eb) => eb.fn.countAll<number>().as("n"))
              .where("status", "not in", ["delivered", "failed"])
              .executeTakeFirstOrThrow();
            dbOpen = Number(row.n) + Number(pending.n);
          } else {
            const d = await through("GET", api("/webhook/deliveries?limit=100"), { key });
            dbOpen =
              d.status === 200
                ? d.body.deliveries.filter((x: any) => x.status !== "delivered" && x.status !== "failed").length
                : 1;
          }
          if (!open.size && !dbOpen) {
            settled = true;
            break;
          }
          await sleep(1000);
        }
        const settleMs = Date.now() - recoveryStart;
        following = false;
        await follower;

        // ---- keys: each keyed request sent again answers a replay (the same answer when it had one), never 409 ---
        const statusCount = new Map<string, number>();
        for (const s of sent)
          statusCount.set(
            `${s.req.area} ${s.first.status}`,
            (statusCount.get(`${s.req.area} ${s.first.status}`) ?? 0) + 1,
          );
        const ids = (b: any) => JSON.stringify([b?.job_id, b?.public_ids, b?.public_id, b?.batch_id, b?.download_id]);
        // Sent again all at once: a locked key makes its retry wait (up to 10 s) before its 409.
        const toReplay = sent.filter(
          (s) =>
            s.idem &&
            (s.first.status === 0 || s.first.status >= 500 || (s.first.status >= 200 && s.first.status < 300)),
        );
        const replayed = toReplay.length;
        const notes: string[] = [];
        await Promise.all(
          toReplay.map(async (s) => {
            const again = await through("POST", api(s.req.path), {
              key,
              body: s.req.body,
              idem: s.idem!,
              timeoutMs: 90_000,
            });
            if (again.status === 409)
              v("key_locked", `${s.req.area} ${s.idem} (first answer ${s.first.status}): ${again.text.slice(0, 200)}`);
            else if (again.status === 500 || again.status === 0)
              v("key_replay_error", `${s.req.area} ${s.idem}: ${again.status} ${again.text.slice(0, 200)}`);
            // A request that died unanswered may run again on its retry; it may fail as itself (a 502 of the area).
            else if (again.status >= 400 && s.first.status === 0)
              notes.push(
                `${s.req.area} ${s.idem}: first unanswered, retry ${again.status} ${again.text.slice(0, 120)}`,
              );
            else if (
              s.first.status >= 200 &&
              s.first.status < 300 &&
              (again.status !== s.first.status || ids(again.body) !== ids(s.first.body))
            ) {
              v(
                "key_replay_differs",
                `${s.req.area} ${s.idem}: first ${s.first.status} ${ids(s.first.body)}, again ${again.status} ${ids(again.body)}`,
              );
            }
            // A request that died before any answer may have made its job only now: follow it to its end too.
            if (s.first.status === 0 && again.status >= 200 && again.status < 300 && s.req.status) {
              for (const p of s.req.status(again.body)) if (!p.includes("undefined")) open.add(p);
            }
          }),
        );
        for (const end = Date.now() + 20_000; open.size && Date.now() < end; await sleep(1000)) {
          for (const p of [...open]) {
            const r = await through("GET", api(p), { key });
            if (r.status === 200 && isTerminal(r.body)) open.delete(p);
          }
        }
        // Deliveries of the last events: seconds with 1-2 s retries (the loop also looks every 10 s at rest).
        for (const end = Date.now() + 15_000; Date.now() < end; await sleep(1000)) {
          const d = await through("GET", api("/webhook/deliveries?limit=100"), { key });
          if (
            d.status === 200 &&
            d.body.deliveries.every((x: any) => x.status === "delivered" || x.status === "failed")
          )
            break;
        }
        const checksStart = Date.now();

        // ---- stop everything, read the tables -----------------------------------------------------------------
        await db?.close();
        await pgAdmin?.end();
        const stoppedAt = Date.now();
        for (const s of slots) {
          s.killing = true;
          await s.proc?.stop();
        }
        const database = await openDatabase(databaseUrl ? { url: databaseUrl } : { dataDir });
        let facts;
        try {
          facts = await checkDatabase(database.kysely, rcv.got, violations, stoppedAt);
        } finally {
          await database.close();
          await rcv.close();
        }

        // ---- the figures ---------------------------------------------------------------------------------------
        const rec = recoveryTimes(
          kills.map((k) => k.at),
          facts.jobs,
        );
        const done = rec.filter((x): x is number => x !== null);
        const count = <T>(xs: T[], key: (x: T) => string) => {
          const m = new Map<string, number>();
          for (const x of xs) m.set(key(x), (m.get(key(x)) ?? 0) + 1);
          return [...m].sort(([a], [b]) => a.localeCompare(b));
        };
        const ids2 = new Set(rcv.got.map((g) => g.id));
        const out = [
          `==== chaos on ${backend.name}: seed ${SEED}, ${LOAD_MS / 1000} s load ====`,
          table("chaos", [
            ["kills api", kills.filter((k) => k.role === "api").length],
            ["kills worker", kills.filter((k) => k.role === "worker").length],
            ["kills all", kills.filter((k) => k.role === "all").length],
            ["terminations", terminations],
            ["restart failures", restartFailures],
            ["requests", sent.length],
            ["keyed / replayed", `${sent.filter((s) => s.idem).length} / ${replayed}`],
            ["keys without an answer row", facts.unansweredKeys.length],
            ["events made during the stop", facts.lateEvents.length],
            ["jobs open but owned at the end", facts.ownedOpen.length],
            [
              "settled",
              settled
                ? `yes, ${(settleMs / 1000).toFixed(1)} s after the load`
                : `NO within ${RECOVERY_MS / 1000} s (${open.size} followed jobs open)`,
            ],
            ["webhook requests", `${rcv.got.length} for ${ids2.size} events`],
            [
              "phases (s)",
              `boot ${(bootMs / 1000).toFixed(0)}, inputs ${((loadStart - testStart - bootMs) / 1000).toFixed(0)}, load ${((recoveryStart - loadStart) / 1000).toFixed(0)}, recovery+keys ${((checksStart - recoveryStart) / 1000).toFixed(0)}, checks ${((Date.now() - checksStart) / 1000).toFixed(0)}`,
            ],
          ]),
          table(
            "first answers (area status)",
            count(
              [...statusCount].flatMap(([k, c]) => Array(c).fill(k)),
              (k) => k,
            ),
          ),
          table(
            "jobs by plugin/kind",
            count(facts.jobs, (j) => `${j.plugin}/${j.kind}`),
          ),
          table(
            "jobs by final state",
            count(facts.jobs, (j) => `${facts.outcome.get(j.id)} ${j.state}`),
          ),
          table("violations by kind", violations.length ? count(violations, (x) => x.kind) : [["none", 0]]),
          table("recovery after a kill", [
            ["kills measured", rec.length],
            ["never recovered", rec.length - done.length],
            ["p50", done.length ? `${(percentile(done, 50) / 1000).toFixed(1)} s` : "-"],
            ["max", done.length ? `${(Math.max(...done) / 1000).toFixed(1)} s` : "-"],
          ]),
        ].join("\n");
        console.log(out);
        if (facts.ownedOpen.length)
          console.log(
            `open after the window, still owned by a queue job or a lease (not stuck):\n${facts.ownedOpen.map((x) => `  ${x}`).join("\n")}`,
          );
        if (notes.length) console.log(`notes (not violations):\n${notes.map((x) => `  ${x}`).join("\n")}`);
        if (violations.length)
          console.log(
            `violations (first 60):\n${violations
              .slice(0, 60)
              .map((x) => `  ${x.kind}: ${x.detail.replace(/\n/g, " | ").slice(0, 400)}`)
              .join("\n")}`,
          );

        assert.ok(sent.length > 0, "the load sent requests");
        assert.ok(kills.length > 0, "something was killed");
        assert.equal(
          count(violations, (x) => x.kind),
          [],
          `violations (replay with CHAOS_SEED=${SEED}):\n${violations
            .slice(0, 30)
            .map((x) => `${x.kind}: ${x.detail.slice(0, 300)}`)
            .join("\n")}`,
        );
      },
    );

    t.run();
  }
}
