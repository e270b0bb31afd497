// How many rows a table holds, all of them or one partner's: what a test reads to see that a refused call
// stored nothing, or that a job left exactly its row.
import type { TestKernel } from "../../testkit/index.ts";

/** The number of rows in `table`, only the partner's when `partnerId` is given. */
export async function rowCount(tk: TestKernel, table: string, partnerId?: string): Promise<number> {
  let q = (tk.kernel.database.kysely as any).selectFrom(table).select((eb: any) => eb.fn.countAll().as("n"));
  if (partnerId !== undefined) q = q.where("partner_id", "=", partnerId);
  return Number((await q.executeTakeFirstOrThrow()).n);
}
