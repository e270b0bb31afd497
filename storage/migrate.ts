// A small migrator: the kernel's migrations first, then each plugin's in registry order, each migration in
// its own transaction, under an advisory lock so two processes starting together do not race.
import { type Kysely, sql } from "kysely";
import type { Migration } from "../contracts/migration.ts";
import type { KernelTables } from "./tables.ts";

const LOCK_KEY = 72_351_001; // arbitrary, constant: identifies "mediagate migrations" among advisory locks

export async function migrate(db: Kysely<KernelTables>, migrations: readonly Migration[]): Promise<string[]> {
  const names = new Set<string>();
  for (const m of migrations) {
    if (names.has(m.name)) throw new Error(`migration ${m.name} is declared twice`);
    names.add(m.name);
  }
  // Under the lock too: two `create table if not exists` at once can both try to create it, and one then
  // fails on Postgres's catalog (duplicate key in pg_type), which two hosts booting together did.
  await db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${LOCK_KEY})`.execute(trx);
    await sql`create table if not exists mediagate_migrations (name text primary key, applied_at timestamptz not null default now())`.execute(
      trx,
    );
  });
  const applied: string[] = [];
  for (const migration of migrations) {
    await db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${LOCK_KEY})`.execute(trx);
      const done = await sql<{
        n: number;
      }>`select 1 as n from mediagate_migrations where name = ${migration.name}`.execute(trx);
      if (done.rows.length) return;
      for (const statement of migration.statements) await sql.raw(statement).execute(trx);
      await sql`insert into mediagate_migrations (name) values (${migration.name})`.execute(trx);
      applied.push(migration.name);
    });
  }
  return applied;
}
