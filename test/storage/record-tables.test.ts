// A plugin's tables declared once (lib/record-tables.ts): the migration's SQL and the row types kysely
// takes come from the same declaration. The type assertions are checked by tsc.
import type { Insertable, Selectable } from "kysely";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { defineTables, json, type TablesOf, tablesMigration } from "../../lib/record-tables.ts";

const tables = defineTables({
  things: {
    columns: {
      id: "bigserial primary key",
      job_id: "text not null references jobs(id)",
      note: "text",
      tags: json<string[]>()("jsonb not null default '[]'"),
      created_at: "timestamptz not null default now()",
    },
    constraints: ["unique (job_id, note)"],
    indexes: { newest: "(job_id, id desc)", one: "unique (note) where note is not null" },
  },
});
type Things = TablesOf<typeof tables>["things"];

const test = suite("record tables");

test("the migration creates each table, then its indexes named after it", () => {
  assert.equal(tablesMigration("x/0001_things", tables), {
    name: "x/0001_things",
    statements: [
      "create table things (\n  id bigserial primary key,\n  job_id text not null references jobs(id),\n  note text,\n  tags jsonb not null default '[]',\n  created_at timestamptz not null default now(),\n  unique (job_id, note)\n)",
      "create index things_newest on things (job_id, id desc)",
      "create unique index things_one on things (note) where note is not null",
    ],
  });
});

test("row types follow the declarations: null unless not null, optional on insert when defaulted", () => {
  const row: Selectable<Things> = { id: 1, job_id: "j", note: null, tags: ["a"], created_at: new Date(0) };
  const insert: Insertable<Things> = { job_id: "j" };
  // @ts-expect-error a not-null column without a default is required on insert
  const missing: Insertable<Things> = { note: "n" };
  // @ts-expect-error a not-null column is never null
  const nulled: Selectable<Things> = { ...row, job_id: null };
  assert.ok(row && insert && missing && nulled);
});

test.run();
