// Caption uploads through the HTTP app on every database backend: the single multipart upload and the
// chunked session (init, part, finalize, abort) with every rule of spec part 2 and our choices (uploads/operations.ts):
// sizes and indexes, parts replaced atomically, the 2 open sessions, finalize's 409 with `missing`, one
// charge for any number of finalizes (repeated or racing), abort, abandoned sessions, another account's
// session, and that every refusal before the charge leaves no row and no file.
import { type Kysely, sql } from "kysely";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { CAPTION_ERRORS } from "../../plugins/captions/errors.ts";
import { LIMITS } from "../../plugins/captions/limits.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { createHttpApp } from "../../transports/http.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { errorBody } from "../helpers/error-body.ts";
import { rawPost } from "../helpers/raw-post.ts";
import { syntheticMp4 } from "./uploads-mp4.ts";
import { checkStyle, uploadsPlugin } from "./uploads-plugin.ts";

const CHUNK = LIMITS.chunkSize;
const HOUR = 3600 * 1000;
/** checkStyle's own text for a style it refuses (whichever module words it). */
const styleError = (raw: unknown) => {
  const r = checkStyle(raw);
  if (r.ok) throw new Error(`checkStyle accepted ${JSON.stringify(raw)}`);
  return r.message;
};

for (const backend of await databaseBackends()) {
  const t = suite(`caption uploads on ${backend.name}`);
  let tk: TestKernel;
  let app: ReturnType<typeof createHttpApp>;

  t.before(async () => {
    tk = await createTestKernel({
      plugins: [uploadsPlugin],
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
    });
    app = createHttpApp(tk.kernel, { adminToken: tk.adminToken });
  });
  t.after(async () => tk.close());

  const fresh = async (credits = 1000, tier: "standard" | "api_plus10" = "standard") =>
    tk.partner({
      credits,
      tier,
      limits: { rate_limits: Object.fromEntries(uploadsPlugin.operations!.map((o) => [`POST ${o.path}`, 10_000])) },
    });
  const post = (key: string, path: string, body?: BodyInit | null, headers: Record<string, string> = {}) =>
    rawPost(app, key, path, body, headers);
  const json = (key: string, path: string, body: unknown) =>
    post(key, path, JSON.stringify(body), { "content-type": "application/json" });
  const part = (
    key: string,
    session: string,
    index: number | string,
    bytes: Uint8Array,
    type = "application/octet-stream",
  ) =>
    post(key, `/captions/uploads/${session}/part/${index}`, bytes as Uint8Array<ArrayBuffer>, { "content-type": type });
  const init = (key: string, size: number, extra: Record<string, unknown> = {}) =>
    json(key, "/captions/uploads/init", { filename: "clip.mp4", size_bytes: size, ...extra });
  const db = () => tk.kernel.database.kysely as Kysely<any>;
  const uploadKeys = async () =>
    (await tk.kernel.blobs.keys()).filter((k) => k.startsWith("captions/private/uploads/")).sort();
  const sessionRows = async (partnerId: string) =>
    db().selectFrom("captions_upload_sessions").selectAll().where("partner_id", "=", partnerId).execute();
  const captionRows = async (partnerId: string) =>
    db().selectFrom("captions_jobs").selectAll().where("partner_id", "=", partnerId).execute();
  const balance = (id: string) => tk.kernel.accounts.balance(id);
  /** A valid synthetic MP4 of `size` bytes split into the session's parts. */
  const partsOf = (file: Uint8Array) =>
    Array.from({ length: Math.ceil(file.byteLength / CHUNK) }, (_, i) => file.subarray(i * CHUNK, (i + 1) * CHUNK));
  /** Nothing of the account's in storage or the tables besides what is listed. */
  const nothingLeft = async (partnerId: string) => {
    assert.equal(await sessionRows(partnerId), []);
    assert.equal(await captionRows(partnerId), []);
  };

  t("init: the 202 body, part_count, the tier's credits, and every refusal leaves no session", async () => {
    const p = await fresh();
    const size = CHUNK * 2 + 1000;
    const res = await init(p.key, size, { partner_job_id: "my-upload/1", style: { size: "large" } });
    assert.is(res.status, 202, JSON.stringify(res.body));
    const { request_id, session_id, ...rest } = res.body;
    assert.type(request_id, "string");
    assert.match(session_id, /^svc-[0-9a-f]{8}$/); // spec part 1, convention 4
    assert.equal(rest, {
      partner_job_id: "my-upload/1",
      chunk_size: 8_388_608,
      part_count: 3,
      max_bytes: 1_000_000_000,
      max_seconds: 1800,
      credits: 25,
      retention: { captioned_output_days: 14, uploaded_source_days: 2, guaranteed: false },
    });
    assert.is((await init(p.key, CHUNK)).body.part_count, 1);
    const plus = await fresh(1000, "api_plus10");
    assert.is((await init(plus.key, 1)).body.credits, 28);

    const q = await fresh();
    const refusals: Array<[unknown, number, string]> = [
      [{ size_bytes: 100 }, 400, CAPTION_ERRORS.filenameRequired],
      [{ filename: "", size_bytes: 100 }, 400, CAPTION_ERRORS.filenameRequired],
      [{ filename: 5, size_bytes: 100 }, 400, CAPTION_ERRORS.filenameRequired],
      [{ filename: "a.mp4" }, 400, CAPTION_ERRORS.sizeInvalid],
      [{ filename: "a.mp4", size_bytes: 0 }, 400, CAPTION_ERRORS.sizeInvalid],
      [{ filename: "a.mp4", size_bytes: -5 }, 400, CAPTION_ERRORS.sizeInvalid],
      [{ filename: "a.mp4", size_bytes: 1.5 }, 400, CAPTION_ERRORS.sizeInvalid],
      [{ filename: "a.mp4", size_bytes: "100" }, 400, CAPTION_ERRORS.sizeInvalid],
      [{ filename: "a.mp4", size_bytes: 1_000_000_001 }, 413, CAPTION_ERRORS.chunkedTooLarge],
      [{ filename: "a.mp4", size_bytes: 1e15 }, 413, CAPTION_ERRORS.chunkedTooLarge],
      [{ filename: "a.mp4", size_bytes: 100, style: "big" }, 400, CAPTION_ERRORS.styleNotObject],
      [{ filename: "a.mp4", size_bytes: 100, style: { size: "huge" } }, 400, styleError({ size: "huge" })],
      [{ filename: "a.mp4", size_bytes: 100, style: { sparkle: true } }, 400, styleError({ sparkle: true })],
      [{ filename: "a.mp4", size_bytes: 100, partner_job_id: "no spaces" }, 400, ""],
    ];
    for (const [body, status, error] of refusals) {
      const r = await json(q.key, "/captions/uploads/init", body);
      assert.is(r.status, status, JSON.stringify(body));
      if (error) assert.is(r.body.error, error, JSON.stringify(body));
    }
    assert.is(
      (
        await post(q.key, "/captions/uploads/init", "filename=a", {
          "content-type": "application/x-www-form-urlencoded",
        })
      ).status,
      415,
    );
    await nothingLeft(q.id);
    assert.is(await balance(q.id), 1000);
  });

  t("at most 2 open sessions (the third is our 429); abort or finalize frees a slot", async () => {
    const p = await fresh();
    const a = (await init(p.key, 100)).body.session_id;
    const b = (await init(p.key, 1000)).body.session_id;
    const third = await init(p.key, 100);
    assert.is(third.status, 429);
    assert.is(third.body.error, CAPTION_ERRORS.tooManySessions);
    assert.is((await sessionRows(p.id)).length, 2);
    // Racing inits for the last slot: one wins.
    assert.is((await post(p.key, `/captions/uploads/${a}/abort`)).status, 200);
    const raced = await Promise.all([init(p.key, 100), init(p.key, 100), init(p.key, 100)]);
    assert.equal(raced.map((r) => r.status).sort(), [202, 429, 429]);
    // A finalized session holds no slot.
    const file = syntheticMp4(1000, { seconds: 5 });
    assert.is((await part(p.key, b, 0, file)).status, 200);
    assert.is((await post(p.key, `/captions/uploads/${b}/finalize`)).status, 202);
    assert.is((await init(p.key, 100)).status, 202);
  });

  t("parts: content type, index, exact sizes, another account's or no session; refusals store nothing", async () => {
    const p = await fresh();
    const size = CHUNK + 500;
    const s = (await init(p.key, size)).body.session_id;
    const bad: Array<[number | string, Uint8Array, number, string, string?]> = [
      [0, new Uint8Array(CHUNK - 1), 400, CAPTION_ERRORS.partSize(0, CHUNK)],
      [1, new Uint8Array(499), 400, CAPTION_ERRORS.partSize(1, 500)],
      [1, new Uint8Array(501), 400, CAPTION_ERRORS.partSize(1, 500)],
      [1, new Uint8Array(CHUNK), 400, CAPTION_ERRORS.partSize(1, 500)],
      [1, new Uint8Array(CHUNK + 1), 400, CAPTION_ERRORS.partSize(1, CHUNK)], // above any part: refused while it streams
      [2, new Uint8Array(500), 400, CAPTION_ERRORS.partIndexInvalid],
      [-1, new Uint8Array(500), 400, CAPTION_ERRORS.partIndexInvalid],
      ["01", new Uint8Array(500), 400, CAPTION_ERRORS.partIndexInvalid],
      ["1.0", new Uint8Array(500), 400, CAPTION_ERRORS.partIndexInvalid],
      ["x", new Uint8Array(500), 400, CAPTION_ERRORS.partIndexInvalid],
      [1, new Uint8Array(500), 415, CAPTION_ERRORS.partContentType, "application/json"],
      [1, new Uint8Array(500), 415, CAPTION_ERRORS.partContentType, "video/mp4"],
    ];
    for (const [index, bytes, status, error, type] of bad) {
      const r = await part(p.key, s, index, bytes, type);
      assert.is(r.status, status, `${index} ${bytes.byteLength}`);
      assert.is(r.body.error, error, `${index} ${bytes.byteLength}`);
    }
    assert.is((await part(p.key, "svc-00000000", 0, new Uint8Array(CHUNK))).status, 404);
    const other = await fresh();
    const theirs = await part(other.key, s, 1, new Uint8Array(500));
    assert.equal([theirs.status, theirs.body.error], [404, CAPTION_ERRORS.sessionNotFound]);
    assert.is((await post(other.key, `/captions/uploads/${s}/finalize`)).status, 404);
    assert.is((await post(other.key, `/captions/uploads/${s}/abort`)).status, 404);
    assert.equal(
      await uploadKeys(),
      (await uploadKeys()).filter((k) => !k.includes(s)),
    );
    assert.equal(await db().selectFrom("captions_upload_parts").selectAll().where("session_id", "=", s).execute(), []);

    const last = await part(p.key, s, 1, new Uint8Array(500).fill(1));
    assert.is(last.status, 200);
    assert.equal(last.body, {
      request_id: last.body.request_id,
      index: 1,
      received_parts: 1,
      received_bytes: 500,
      total_bytes: size,
    });
    const first = await part(p.key, s, 0, new Uint8Array(CHUNK));
    assert.equal([first.body.received_parts, first.body.received_bytes], [2, size]);
  });

  t("a part sent again replaces the earlier one: one blob per index, the new bytes, the old blob removed", async () => {
    const p = await fresh();
    const s = (await init(p.key, 300)).body.session_id;
    await part(p.key, s, 0, new Uint8Array(300).fill(1));
    const before = (await uploadKeys()).filter((k) => k.includes(s));
    assert.is(before.length, 1);
    const again = await part(p.key, s, 0, new Uint8Array(300).fill(2));
    assert.equal([again.status, again.body.received_parts, again.body.received_bytes], [200, 1, 300]);
    const after = (await uploadKeys()).filter((k) => k.includes(s));
    assert.is(after.length, 1);
    assert.is.not(after[0], before[0]);
    assert.is((await tk.kernel.blobs.get(after[0]!))![0], 2);
    // Racing re-sends of one index: one blob remains, and it is the one the row names.
    await Promise.all([1, 2, 3, 4].map((v) => part(p.key, s, 0, new Uint8Array(300).fill(v))));
    const rows = await db().selectFrom("captions_upload_parts").selectAll().where("session_id", "=", s).execute();
    assert.is(rows.length, 1);
    assert.equal(
      (await uploadKeys()).filter((k) => k.includes(s)),
      [`captions/${rows[0]!.key}`],
    );
    // Stored under private/ with an expiry the retention sweeper honours.
    assert.ok(rows[0]!.key.startsWith("private/uploads/"));
    const retained = await db()
      .selectFrom("retained_blobs")
      .selectAll()
      .where("key", "=", `captions/${rows[0]!.key}`)
      .executeTakeFirst();
    assert.ok(retained, "a part blob has a retention row");
  });

  t("finalize: 409 with the missing indexes, then one charge, a repeat answers 200 with the same job", async () => {
    const p = await fresh();
    const file = syntheticMp4(CHUNK * 3 + 123, { seconds: 42 });
    const parts = partsOf(file);
    const init1 = await init(p.key, file.byteLength, { partner_job_id: "pj-1", style: { size: "small" } });
    const s = init1.body.session_id;
    assert.is((await part(p.key, s, 2, parts[2]!)).status, 200);
    const missing = await post(p.key, `/captions/uploads/${s}/finalize`);
    assert.equal(errorBody(missing), { error: CAPTION_ERRORS.partsMissing, missing: [0, 1, 3] });
    assert.is(missing.status, 409);
    for (const i of [3, 0, 1]) assert.is((await part(p.key, s, i, parts[i]!)).status, 200);
    assert.is(await balance(p.id), 1000);
    // partner_job_id cannot change.
    const changed = await json(p.key, `/captions/uploads/${s}/finalize`, { partner_job_id: "other" });
    assert.equal([changed.status, changed.body.error], [400, CAPTION_ERRORS.partnerJobIdFixed]);

    const done = await json(p.key, `/captions/uploads/${s}/finalize`, { partner_job_id: "pj-1" });
    assert.is(done.status, 202, JSON.stringify(done.body));
    assert.is(done.body.status, "pending");
    assert.is(done.body.partner_job_id, "pj-1");
    assert.is(done.body.credits_used, 25);
    assert.is(done.body.credits_remaining, 975);
    assert.equal(done.body.retention, { captioned_output_days: 14, uploaded_source_days: 2, guaranteed: false });
    assert.is(await balance(p.id), 975);
    // The caption row names the parts in order, no joined copy; the session's style was kept.
    const row = (await captionRows(p.id))[0]!;
    const keys = JSON.parse(row.source_keys);
    const stored = await db()
      .selectFrom("captions_upload_parts")
      .select(["idx", "key"])
      .where("session_id", "=", s)
      .orderBy("idx")
      .execute();
    assert.equal(
      keys,
      stored.map((r) => r.key),
    );
    assert.is(Number(row.source_bytes), file.byteLength);
    assert.is(JSON.parse(row.style).size, "small");
    assert.is((await uploadKeys()).filter((k) => k.includes(s)).length, 4);

    for (let i = 0; i < 2; i++) {
      const again = await post(p.key, `/captions/uploads/${s}/finalize`);
      assert.is(again.status, 200);
      assert.is(again.body.job_id, done.body.job_id);
      assert.is(again.body.credits_remaining, 975);
    }
    assert.is(await balance(p.id), 975);
    assert.is((await captionRows(p.id)).length, 1);
    // The session is closed: no parts, no abort.
    assert.equal((await part(p.key, s, 0, parts[0]!)).body.error, CAPTION_ERRORS.sessionClosed);
    const abort = await post(p.key, `/captions/uploads/${s}/abort`);
    assert.equal([abort.status, abort.body.error], [409, CAPTION_ERRORS.sessionClosed]);
  });

  t("finalize's style overrides the session's as a whole", async () => {
    const p = await fresh();
    const file = syntheticMp4(500, { seconds: 3 });
    const s = (await init(p.key, 500, { style: { size: "small", case: "upper" } })).body.session_id;
    await part(p.key, s, 0, file);
    assert.is((await json(p.key, `/captions/uploads/${s}/finalize`, { style: { size: "nope" } })).status, 400);
    const done = await json(p.key, `/captions/uploads/${s}/finalize`, { style: { size: "large" } });
    assert.is(done.status, 202);
    const style = JSON.parse((await captionRows(p.id))[0]!.style);
    assert.equal([style.size, style.case], ["large", "normal"]);
  });

  t(
    "finalize refusals before the charge: not an MP4, no video, too long, no credits; the session stays open",
    async () => {
      const p = await fresh(10);
      const size = CHUNK + 2000;
      const s = (await init(p.key, size)).body.session_id;
      await part(p.key, s, 0, new Uint8Array(CHUNK).fill(0x41));
      await part(p.key, s, 1, new Uint8Array(2000));
      const fin = () => post(p.key, `/captions/uploads/${s}/finalize`);
      assert.equal(errorBody(await fin()), { error: CAPTION_ERRORS.notMp4 });
      const cases: Array<[Uint8Array, string]> = [
        [syntheticMp4(size, { seconds: 10, tracks: ["soun"] }), CAPTION_ERRORS.noVideoStream],
        [syntheticMp4(size, { seconds: 1801 }), CAPTION_ERRORS.tooLong],
      ];
      for (const [file, error] of cases) {
        await part(p.key, s, 0, file.subarray(0, CHUNK));
        const r = await fin();
        assert.equal([r.status, r.body.error], [400, error]);
      }
      const good = syntheticMp4(size, { seconds: 1800 });
      await part(p.key, s, 0, good.subarray(0, CHUNK));
      const poor = await fin();
      assert.equal([poor.status, poor.body.error], [402, CAPTION_ERRORS.insufficientCredits(25)]);
      assert.equal(await captionRows(p.id), []);
      assert.is(await balance(p.id), 10);
      assert.is((await sessionRows(p.id))[0]!.state, "open");
    },
  );

  t("racing finalizes: one job and one charge; the others 409 finalizing or the same job", async () => {
    const p = await fresh();
    const file = syntheticMp4(CHUNK + 10, { seconds: 5 });
    const s = (await init(p.key, file.byteLength)).body.session_id;
    for (const [i, bytes] of partsOf(file).entries()) await part(p.key, s, i, bytes);
    const results = await Promise.all([1, 2, 3].map(() => post(p.key, `/captions/uploads/${s}/finalize`)));
    const accepted = results.filter((r) => r.status === 202);
    assert.is(accepted.length, 1, JSON.stringify(results.map((r) => [r.status, r.body])));
    for (const r of results.filter((r) => r.status !== 202)) {
      assert.ok(
        (r.status === 409 && r.body.error === CAPTION_ERRORS.sessionFinalizing) ||
          (r.status === 200 && r.body.job_id === accepted[0]!.body.job_id),
        JSON.stringify(r.body),
      );
    }
    assert.is(await balance(p.id), 975);
    assert.is((await captionRows(p.id)).length, 1);
    // A part racing the finalize is refused or stored before it; never after the charge.
  });

  t(
    "a finalize whose process died is taken over once its lease expired; until then parts, abort and finalize are 409",
    async () => {
      const p = await fresh();
      const file = syntheticMp4(700, { seconds: 4 });
      const s = (await init(p.key, 700)).body.session_id;
      await part(p.key, s, 0, file);
      // As a finalize leaves the row while it checks the file (a crash there leaves it so, uncharged), with the
      // lease of its process (core/leases.ts), alive for now.
      await db()
        .updateTable("captions_upload_sessions")
        .set({ state: "finalizing", finalize_token: "dead", finalizing_since: new Date(tk.clock.now()) })
        .where("id", "=", s)
        .execute();
      await db()
        .insertInto("leases")
        .values({
          key: `captions-finalize:${s}`,
          owner: "a-process-that-died",
          expires_at: sql`now() + interval '1 hour'`,
        })
        .execute();
      for (const r of [
        await part(p.key, s, 0, file),
        await post(p.key, `/captions/uploads/${s}/abort`),
        await post(p.key, `/captions/uploads/${s}/finalize`),
      ]) {
        assert.equal([r.status, r.body.error], [409, CAPTION_ERRORS.sessionFinalizing]);
      }
      // Its process stopped renewing it: the lease expired (LEASE_SECONDS after the last heartbeat).
      await db()
        .updateTable("leases")
        .set({ expires_at: sql`now() - interval '1 second'` })
        .where("key", "=", `captions-finalize:${s}`)
        .execute();
      const done = await post(p.key, `/captions/uploads/${s}/finalize`);
      assert.is(done.status, 202);
      assert.is(await balance(p.id), 975);
    },
  );

  t("a stored part gone at finalize is missing: 409 names it, nothing charged, the session open again", async () => {
    const p = await fresh();
    const file = syntheticMp4(CHUNK + 50, { seconds: 4 });
    const s = (await init(p.key, file.byteLength)).body.session_id;
    for (const [i, bytes] of partsOf(file).entries()) await part(p.key, s, i, bytes);
    const [first] = await db()
      .selectFrom("captions_upload_parts")
      .select("key")
      .where("session_id", "=", s)
      .where("idx", "=", 0)
      .execute();
    await tk.kernel.blobs.remove(`captions/${first!.key}`);
    const r = await post(p.key, `/captions/uploads/${s}/finalize`);
    assert.equal([r.status, errorBody(r)], [409, { error: CAPTION_ERRORS.partsMissing, missing: [0] }]);
    assert.is(await balance(p.id), 1000);
    assert.is((await sessionRows(p.id))[0]!.state, "open");
    // Sending the part again repairs it.
    await part(p.key, s, 0, partsOf(file)[0]!);
    assert.is((await post(p.key, `/captions/uploads/${s}/finalize`)).status, 202);
  });

  t("abort removes the parts and the session; again it is 404", async () => {
    const p = await fresh();
    const s = (await init(p.key, CHUNK + 5)).body.session_id;
    await part(p.key, s, 0, new Uint8Array(CHUNK));
    await part(p.key, s, 1, new Uint8Array(5));
    assert.is((await uploadKeys()).filter((k) => k.includes(s)).length, 2);
    const res = await post(p.key, `/captions/uploads/${s}/abort`);
    assert.equal(res.body, { request_id: res.body.request_id, ok: true, session_id: s });
    assert.equal(
      (await uploadKeys()).filter((k) => k.includes(s)),
      [],
    );
    await nothingLeft(p.id);
    assert.is((await post(p.key, `/captions/uploads/${s}/abort`)).status, 404);
    assert.is((await part(p.key, s, 1, new Uint8Array(5))).status, 404);
  });

  t("abandoned sessions: 404 after the window, removed with their parts by the next init", async () => {
    const p = await fresh();
    const s = (await init(p.key, 400)).body.session_id;
    await part(p.key, s, 0, new Uint8Array(400));
    tk.clock.advance(25 * HOUR);
    assert.is((await part(p.key, s, 0, new Uint8Array(400))).status, 404);
    assert.is((await post(p.key, `/captions/uploads/${s}/finalize`)).status, 404);
    assert.is((await uploadKeys()).filter((k) => k.includes(s)).length, 1);
    // Another account's init sweeps it.
    const q = await fresh();
    assert.is((await init(q.key, 100)).status, 202);
    assert.equal(
      (await uploadKeys()).filter((k) => k.includes(s)),
      [],
    );
    assert.equal(await sessionRows(p.id), []);
  });

  t("the single upload: stored under private/ for 2 days, charged once; refusals store nothing", async () => {
    const p = await fresh();
    const form = (video?: Uint8Array | null, fields: Record<string, string> = {}) => {
      const f = new FormData();
      for (const [k, v] of Object.entries(fields)) f.set(k, v);
      if (video) f.set("video", new Blob([video as Uint8Array<ArrayBuffer>], { type: "video/mp4" }), "clip.mp4");
      return f;
    };
    const up = (f: FormData | string, headers: Record<string, string> = {}) =>
      post(p.key, "/captions/upload", f, headers);
    const before = await uploadKeys();
    const refusals: Array<[FormData | string, number, string, Record<string, string>?]> = [
      [form(null), 400, CAPTION_ERRORS.videoFileMissing],
      [form(new Uint8Array(5000).fill(7)), 400, CAPTION_ERRORS.notMp4],
      [form(syntheticMp4(5000, { seconds: 3, tracks: ["soun"] })), 400, CAPTION_ERRORS.noVideoStream],
      [form(syntheticMp4(5000, { seconds: 2000 })), 400, CAPTION_ERRORS.tooLong],
      [form(syntheticMp4(5000, { seconds: 3 }), { style: "{not json" }), 400, CAPTION_ERRORS.styleNotObject],
      [
        form(syntheticMp4(5000, { seconds: 3 }), { style: JSON.stringify({ size: "huge" }) }),
        400,
        styleError({ size: "huge" }),
      ],
      [form(syntheticMp4(5000, { seconds: 3 }), { style: "[1]" }), 400, styleError([1])],
      [form(syntheticMp4(5000, { seconds: 3 }), { partner_job_id: "bad id!" }), 400, ""],
      ["raw bytes", 415, CAPTION_ERRORS.unsupportedMultipart, { "content-type": "application/octet-stream" }],
      [
        "--x\r\nbroken",
        400,
        CAPTION_ERRORS.malformedMultipart,
        { "content-type": "multipart/form-data; boundary=zzz" },
      ],
    ];
    for (const [body, status, error, headers] of refusals) {
      const r = await up(body, headers);
      assert.is(r.status, status, JSON.stringify(r.body));
      if (error) assert.is(r.body.error, error);
    }
    assert.equal(await uploadKeys(), before);
    await nothingLeft(p.id);

    const ok = await up(
      form(syntheticMp4(20_000, { seconds: 12 }), {
        style: JSON.stringify({ size: "large" }),
        partner_job_id: "single-1",
      }),
    );
    assert.is(ok.status, 202, JSON.stringify(ok.body));
    assert.equal([ok.body.partner_job_id, ok.body.credits_used, ok.body.credits_remaining], ["single-1", 25, 975]);
    const row = (await captionRows(p.id))[0]!;
    const [key] = JSON.parse(row.source_keys);
    assert.ok(key.startsWith("private/uploads/"));
    assert.is((await tk.kernel.blobs.get(`captions/${key}`))!.byteLength, 20_000);
    const retained = await db()
      .selectFrom("retained_blobs")
      .selectAll()
      .where("key", "=", `captions/${key}`)
      .executeTakeFirstOrThrow();
    assert.is(new Date(retained.expires_at).getTime() - tk.clock.now(), 2 * 24 * HOUR);
    assert.is(JSON.parse(row.style).size, "large");

    // Not enough credits: the file stored for the job is removed again.
    const poor = await fresh(5);
    const before2 = await uploadKeys();
    const r = await post(poor.key, "/captions/upload", form(syntheticMp4(3000, { seconds: 2 })));
    assert.is(r.status, 402);
    assert.equal(await uploadKeys(), before2);
    await nothingLeft(poor.id);
  });

  t("the captions feature switched off: 403 on every upload operation", async () => {
    const off = await tk.partner({ tier: "standard", features: { captions: false } });
    for (const path of [
      "/captions/upload",
      "/captions/uploads/init",
      "/captions/uploads/svc-00000000/part/0",
      "/captions/uploads/svc-00000000/finalize",
      "/captions/uploads/svc-00000000/abort",
    ]) {
      const r = await post(off.key, path, "{}", { "content-type": "application/json" });
      assert.is(r.status, 403, path);
    }
  });

  t.run();
}

// The single upload's 95,000,000-byte cap, once (it allocates about 100 MB).
const big = suite("caption single upload size cap");
big("a file above 95,000,000 bytes is 413; a form far above is refused before it is read", async () => {
  const tk = await createTestKernel({ plugins: [uploadsPlugin] });
  const app = createHttpApp(tk.kernel, { adminToken: tk.adminToken });
  try {
    const p = await tk.partner();
    const send = async (body: BodyInit, headers: Record<string, string> = {}) => {
      const res = await app.fetch(
        new Request("http://mediagate.test/api/v1/partner/captions/upload", {
          method: "POST",
          headers: { authorization: `Bearer ${p.key}`, "user-agent": "t/1", ...headers },
          body,
        }),
      );
      const answer = { body: (await res.json()) as any, headers: res.headers };
      return { status: res.status, body: errorBody(answer) };
    };
    const f = new FormData();
    f.set(
      "video",
      new Blob([syntheticMp4(LIMITS.singleUploadBytes + 1, { seconds: 3 }) as Uint8Array<ArrayBuffer>]),
      "big.mp4",
    );
    assert.equal(await send(f), { status: 413, body: { error: CAPTION_ERRORS.singleTooLarge } });
    const declared = await send(new Uint8Array(10), {
      "content-type": "multipart/form-data; boundary=x",
      "content-length": String(200_000_000),
    }).catch(() => null);
    if (declared) assert.equal(declared, { status: 413, body: { error: CAPTION_ERRORS.singleTooLarge } });
    assert.equal(
      (await tk.kernel.blobs.keys()).filter((k) => k.includes("uploads")),
      [],
    );
  } finally {
    await tk.close();
  }
});
big.run();
