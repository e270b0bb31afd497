// First-start duties of a server process: the admin token and the demo partner.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Kernel } from "./kernel.ts";
import { newSecret } from "./ids.ts";

/**
 * ADMIN_TOKEN from the environment, else the one saved in DATA_DIR on an earlier start, else a new one,
 * saved (mode 0600, so the CLI on this machine finds it) and returned with `created` so it is printed once.
 */
export function resolveAdminToken(envToken: string | undefined, dataDir: string): { token: string; created: boolean } {
  if (envToken) return { token: envToken, created: false };
  const file = join(dataDir, "admin-token");
  if (existsSync(file)) return { token: readFileSync(file, "utf8").trim(), created: false };
  mkdirSync(dataDir, { recursive: true });
  const token = `adm_${newSecret(24)}`;
  writeFileSync(file, token + "\n", { mode: 0o600 });
  chmodSync(file, 0o600);
  return { token, created: true };
}

export const DEMO_CREDITS = 10_000;

/**
 * On the first start of an empty embedded database: a demo partner with 10,000 credits. Returns its key,
 * which exists nowhere else (only its hash is stored), or undefined when nothing was created.
 */
export async function createDemoPartnerIfEmpty(kernel: Kernel): Promise<string | undefined> {
  if (kernel.database.kind !== "pglite") return undefined;
  const db = kernel.database.kysely;
  const marker = await db.selectFrom("settings").select("key").where("key", "=", "demo_partner").executeTakeFirst();
  if (marker) return undefined;
  const { n } = await db.selectFrom("partners").select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
  if (Number(n) > 0) return undefined;
  const { partner, apiKey } = await kernel.accounts.create({ name: "Demo partner", credits: DEMO_CREDITS });
  await db.insertInto("settings").values({ key: "demo_partner", value: JSON.stringify({ partner_id: partner.id }) }).onConflict((oc) => oc.column("key").doNothing()).execute();
  return apiKey;
}
