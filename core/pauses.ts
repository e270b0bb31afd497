// Service-wide pause switches ("Metadata removal is paused right now", "Downloads are paused right now"): an
// operator stops new work of one kind for every account and every process at once, without a restart. A
// plugin declares the switches it honours (`pauses`) and asks `ctx.isPaused(name)`; operators flip them
// through the admin API (`PUT /api/v1/admin/pauses/<name>`). Stored as rows of the kernel's `settings`
// table, read per request: one indexed lookup, and nothing to invalidate across processes.
import type { Kysely } from "kysely";
import type { KernelTables } from "../storage/tables.ts";

const keyOf = (name: string) => `paused:${name}`;

export async function isPaused(db: Kysely<KernelTables>, name: string): Promise<boolean> {
  const row = await db.selectFrom("settings").select("value").where("key", "=", keyOf(name)).executeTakeFirst();
  const value = typeof row?.value === "string" ? JSON.parse(row.value) : row?.value;
  return value === true;
}

export async function setPaused(db: Kysely<KernelTables>, name: string, paused: boolean): Promise<void> {
  const value = JSON.stringify(paused);
  await db
    .insertInto("settings")
    .values({ key: keyOf(name), value })
    .onConflict((oc) => oc.column("key").doUpdateSet({ value }))
    .execute();
}
