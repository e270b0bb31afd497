// An account's library: rows a partner keeps for reuse, each holding one stored file, such as Omni's characters
// and voices (spec part 3, GET and DELETE /omni/characters and /omni/voices). Listed newest first, deleted
// with their file; another account's row reads exactly like a missing one (a 404 either way).

import type { BlobStore } from "../contracts/blobs.ts";
import { notFound } from "./errors.ts";
import { isJobId } from "./job-list.ts";
import type { PluginDb } from "./records.ts";

/** Where a library lives: its table, its id column (a `svc-` id), and the column naming its stored file. */
export interface LibraryTable {
  table: string;
  id: string;
  file: string;
}

/** The partner's rows of the library, newest first (ties broken by id, newest first too). */
export async function listLibrary<Row>(db: PluginDb, library: LibraryTable, partnerId: string): Promise<Row[]> {
  const rows = await db
    .selectFrom(library.table)
    .selectAll()
    .where("partner_id", "=", partnerId)
    .orderBy("created_at", "desc")
    .orderBy(library.id, "desc")
    .execute();
  return rows as Row[];
}

/**
 * Deletes the partner's row `id` and then its file (a file left behind by a failed removal is unreachable:
 * its key was a capability). A malformed, missing or foreign id is the 404 `missing`.
 */
export async function deleteFromLibrary(
  db: PluginDb,
  blobs: BlobStore,
  library: LibraryTable,
  partnerId: string,
  id: string | undefined,
  missing: string,
) {
  if (!isJobId(id)) throw notFound(missing);
  const row: Record<string, string> | undefined = await db
    .deleteFrom(library.table)
    .where("partner_id", "=", partnerId)
    .where(library.id, "=", id)
    .returning([library.file])
    .executeTakeFirst();
  if (!row) throw notFound(missing);
  await blobs.remove(row[library.file]!).catch(() => {});
  return { ok: true as const, deleted_id: id };
}
