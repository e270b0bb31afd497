// Service ids: `svc-` + 8 hex (convention 4). 32 bits collide in practice, so uniqueness is not left to chance:
// allocateServiceId reserves each id in one table (service_ids) shared by every kind.
import { randomBytes } from "node:crypto";
import { type QueryExecutorProvider, sql } from "kysely";

export const SERVICE_ID = /^svc-[0-9a-f]{8}$/;

export function randomServiceId(): string {
  return `svc-${randomBytes(4).toString("hex")}`;
}

/**
 * Reserves a never-used `svc-` id. Pass the caller's transaction so a rolled-back job frees its id too. Any
 * handle will do (the kernel's, a plugin's typed by its own tables): the statement runs through its executor.
 */
export async function allocateServiceId(db: QueryExecutorProvider): Promise<string> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const id = randomServiceId();
    const inserted = await sql<{
      id: string;
    }>`insert into service_ids (id) values (${id}) on conflict do nothing returning id`.execute(db);
    if (inserted.rows.length) return id;
  }
  // 20 collisions in a row means the 4-billion space is nearly full, not bad luck.
  throw new Error("service id space exhausted");
}
