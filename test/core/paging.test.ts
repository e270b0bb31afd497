// Pagination (convention 8) through lib/paging.ts, on every database backend: one page of a query and the
// total the same filtered query matches, newest first; the documented shape and the body in the order every
// list answers (`<field>, total, limit, offset`); each list's default and maximum.

import type { ColumnType, Generated, Kysely } from "kysely";
import { definePlugin, listPage, operation, PAGE_BOUNDS, pageBody, pageQuery, pageShape } from "mediagate/plugin";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { z } from "zod";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { generousLimits } from "../helpers/test-limits.ts";

interface NotesTable {
  id: Generated<number>;
  partner_id: string;
  body: string;
  pinned: boolean;
  created_at: ColumnType<Date, Date | string | undefined, never>;
}
type Db = Kysely<{ notes: NotesTable }>;

const Entry = z.object({ id: z.number().int(), body: z.string() });

// A stand-in plugin whose list is written the way every list of ours is.
const notes = definePlugin({
  name: "notes",
  rateLimits: generousLimits("GET /notes"),
  migrations: [
    {
      name: "notes/0001",
      statements: [
        "create table notes (id bigserial primary key, partner_id text not null, body text not null, pinned boolean not null default false, created_at timestamptz not null default now())",
      ],
    },
  ],
  operations: [
    operation({
      method: "GET",
      path: "/notes",
      summary: "Notes, newest first",
      input: pageQuery(PAGE_BOUNDS.standard).extend({ pinned: z.enum(["1"]).optional() }),
      output: pageShape("notes", Entry),
      async handle(ctx) {
        let query = (ctx.db as Db)
          .selectFrom("notes")
          .select(["id", "body"])
          .where("partner_id", "=", ctx.partner.id)
          .orderBy("id", "desc");
        if (ctx.input.pinned) query = query.where("pinned", "=", true);
        return pageBody("notes", await listPage(query, ctx.input), ctx.input, (row) => ({
          id: row.id,
          body: row.body,
        }));
      },
    }),
  ],
});

for (const backend of await databaseBackends()) {
  const t = suite(`paging on ${backend.name}`);
  let tk: TestKernel;
  let db: Db;
  t.before.each(async () => {
    tk = await createTestKernel({
      plugins: [notes],
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
    });
    db = tk.kernel.database.kysely as unknown as Db;
  });
  t.after.each(async () => {
    await tk?.close();
  });

  const write = async (partnerId: string, count: number, pinnedEvery = 0) => {
    for (let i = 0; i < count; i++)
      await db
        .insertInto("notes")
        .values({ partner_id: partnerId, body: `note ${i}`, pinned: pinnedEvery > 0 && i % pinnedEvery === 0 })
        .execute();
  };

  t("a page of the query, newest first, with the total the query matches", async () => {
    await write("p1", 7);
    await write("p2", 3);
    const query = db.selectFrom("notes").select(["id", "body"]).where("partner_id", "=", "p1").orderBy("id", "desc");
    const page = await listPage(query, { limit: 3, offset: 2 });
    assert.is(page.total, 7);
    assert.equal(
      page.rows.map((r) => r.body),
      ["note 4", "note 3", "note 2"],
    );
    const past = await listPage(query, { limit: 3, offset: 20 });
    assert.equal(past, { rows: [], total: 7 }, "an offset past the end is an empty page, total still counted");
  });

  t("the total counts the same filters and joins, not the page (the order is dropped from the count)", async () => {
    await write("p1", 9, 3);
    const pinned = db
      .selectFrom("notes as n")
      .innerJoin("notes as m", "m.id", "n.id")
      .select(["n.id", "n.body"])
      .where("n.partner_id", "=", "p1")
      .where("n.pinned", "=", true)
      .orderBy("n.created_at", "desc")
      .orderBy("n.id", "desc");
    const page = await listPage(pinned, { limit: 2, offset: 0 });
    assert.is(page.total, 3);
    assert.equal(
      page.rows.map((r) => r.body),
      ["note 6", "note 3"],
    );
  });

  t(
    "the answer: the list's field, total, limit, offset, in that order; default and maximum of its bounds",
    async () => {
      const p = await tk.partner();
      await write(p.id, 55, 5);
      const first = await tk.request("GET", "/notes", { key: p.key });
      assert.is(first.status, 200);
      assert.equal(
        Object.keys(first.body).filter((k) => k !== "request_id"),
        ["notes", "total", "limit", "offset"],
      );
      assert.is(first.body.notes.length, PAGE_BOUNDS.standard.default);
      assert.equal(first.body.notes[0], { id: 55, body: "note 54" });
      assert.is(first.body.total, 55);
      assert.is(first.body.limit, 20);
      assert.is(first.body.offset, 0);

      const clamped = await tk.request("GET", "/notes?limit=500&offset=50", { key: p.key });
      assert.is(clamped.body.limit, PAGE_BOUNDS.standard.max);
      assert.is(clamped.body.notes.length, 5);
      assert.is(clamped.body.offset, 50);

      const filtered = await tk.request("GET", "/notes?pinned=1&limit=2", { key: p.key });
      assert.is(filtered.body.total, 11);
      assert.equal(
        filtered.body.notes.map((n: { body: string }) => n.body),
        ["note 50", "note 45"],
      );

      const junk = await tk.request("GET", "/notes?limit=0", { key: p.key });
      assert.is(junk.status, 400);
      assert.is(junk.body.error, "limit must be a positive integer");

      // Past 2^53 a number is no longer the one sent and the database refuses it: a 400, not a 500.
      for (const [query, error] of [
        ["offset=99999999999999999999", "offset must be a non-negative integer"],
        ["limit=99999999999999999999", "limit must be a positive integer"],
        ["offset=1e3", "offset must be a non-negative integer"],
      ]) {
        const huge = await tk.request("GET", `/notes?${query}`, { key: p.key });
        assert.is(huge.status, 400, query);
        assert.is(huge.body.error, error, query);
      }
      const far = await tk.request("GET", "/notes?offset=9007199254740991", { key: p.key });
      assert.is(far.status, 200, "the largest safe offset is an empty page");
      assert.equal(far.body.notes, []);
    },
  );

  t.run();
}

const shapes = suite("paging shapes");

shapes("pageShape documents exactly what a hand-written list schema does", () => {
  const written = z.object({
    things: z.array(Entry),
    total: z.number().int(),
    limit: z.number().int(),
    offset: z.number().int(),
  });
  assert.equal(z.toJSONSchema(pageShape("things", Entry)), z.toJSONSchema(written));
  assert.equal(Object.keys(pageShape("things", Entry).shape), ["things", "total", "limit", "offset"]);
});

shapes("pageBody maps each row through the view alone (not map's index)", () => {
  const body = pageBody(
    "things",
    { rows: [1, 2], total: 9 },
    { limit: 2, offset: 4 },
    (n: number, extra?: unknown) => ({ n, extra }),
  );
  assert.equal(body, {
    things: [
      { n: 1, extra: undefined },
      { n: 2, extra: undefined },
    ],
    total: 9,
    limit: 2,
    offset: 4,
  });
  assert.equal(Object.keys(body), ["things", "total", "limit", "offset"]);
});

shapes("every list's bounds are the spec's convention 8", () => {
  assert.equal(PAGE_BOUNDS.standard, { default: 20, max: 50 });
  assert.equal(PAGE_BOUNDS.voiceovers, { default: 30, max: 200 });
  assert.equal(PAGE_BOUNDS.music, { default: 30, max: 200 });
  assert.equal(PAGE_BOUNDS.transactions, { default: 50, max: 200 });
  assert.equal(PAGE_BOUNDS.videos, { default: 20, max: 200 });
  assert.equal(PAGE_BOUNDS.socialDownloads, { default: 25, max: 100 });
  assert.equal(PAGE_BOUNDS.webhookDeliveries, { default: 50, max: 200 });
});

shapes.run();
