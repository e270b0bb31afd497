// What a test reads back of the ledger to see a charge taken once and a refund given once: the amounts of
// the lines that match, in the order they were written.
import type { LedgerType } from "../../storage/tables.ts";
import type { TestKernel } from "../../testkit/index.ts";

/** The amounts of a partner's or some jobs' ledger lines (of one type, when given), oldest first. */
export async function ledgerAmounts(
  tk: TestKernel,
  of: { partnerId?: string; jobIds?: string[]; type?: LedgerType },
): Promise<number[]> {
  let q = tk.kernel.database.kysely.selectFrom("ledger").select("amount");
  if (of.partnerId) q = q.where("partner_id", "=", of.partnerId);
  if (of.jobIds) q = q.where("job_id", "in", of.jobIds);
  if (of.type) q = q.where("type", "=", of.type);
  return (await q.orderBy("id").execute()).map((line) => Number(line.amount));
}
