// What a test reads of one partner after a call: the balance the API shows, the sum of the ledger, and the
// stored bytes behind a media URL of this service (never fetched over HTTP: the blob store is the truth).
import type { Kysely } from "kysely";
import type { LedgerType } from "../../storage/tables.ts";
import type { TestKernel } from "../../testkit/index.ts";

/** Credits remaining as GET /credits answers them. */
export async function balance(tk: TestKernel, key: string): Promise<number> {
  return (await tk.request("GET", "/credits", { key })).body.credits_remaining;
}

/** The sum of the partner's ledger: zero when every charge was refunded. */
export async function ledgerSum(tk: TestKernel, partnerId: string): Promise<number> {
  const row = await tk.kernel.database.kysely
    .selectFrom("ledger")
    .select((eb) => eb.fn.sum<number>("amount").as("s"))
    .where("partner_id", "=", partnerId)
    .executeTakeFirstOrThrow();
  return Number(row.s);
}

/** How many rows of `table` (jobs, ledger, a plugin's records) are the partner's; of one ledger `type`, when given. */
export async function partnerRows(
  tk: TestKernel,
  table: string,
  partnerId: string,
  type?: LedgerType,
): Promise<number> {
  let q = (tk.kernel.database.kysely as Kysely<any>)
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("partner_id", "=", partnerId);
  if (type) q = q.where("type", "=", type);
  return Number((await q.executeTakeFirstOrThrow()).n);
}

/** The stored bytes behind a media URL of this service. */
export async function mediaBytes(tk: TestKernel, url: string): Promise<Uint8Array> {
  const bytes = await tk.kernel.blobs.get(
    new URL(url).pathname
      .replace(/^\/media\//, "")
      .split("/")
      .map(decodeURIComponent)
      .join("/"),
  );
  if (!bytes) throw new Error(`no blob behind ${url}`);
  return bytes;
}
