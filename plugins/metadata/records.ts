// The removals table (migrations.ts): one row per counted attempt, whatever its outcome (status, categories,
// sizes, blob key), for operators; the partner sees only the response.
import type { Insertable, Kysely } from "kysely";
import type { MetadataTables } from "./migrations.ts";

export async function recordAttempt(
  db: Kysely<MetadataTables>,
  row: Insertable<MetadataTables["metadata_removals"]>,
): Promise<void> {
  await db.insertInto("metadata_removals").values(row).execute();
}
