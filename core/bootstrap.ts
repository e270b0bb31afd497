// First-start duties of a server process: the admin token and the demo partner.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError } from "../lib/plugin-config.ts";
import { privateDirSync, writePrivateFileSync } from "../storage/private-fs.ts";
import { newSecret } from "./ids.ts";
import type { Kernel } from "./kernel.ts";
import { weakTokenReason } from "./token-strength.ts";

export { MIN_ADMIN_TOKEN_LENGTH } from "./token-strength.ts";

/**
 * The admin token is the whole of the admin API's authentication, so it must be a secret nobody guesses: at
 * least 32 characters and about 100 bits by core/token-strength.ts's estimate, which refuses a repeated
 * character, a short alphabet, counting runs and word-shaped tokens as well as short ones (the generated one
 * is `adm_` and 48 random hex digits). Only the server enforces it: the CLI sends whatever it is given, and
 * the server decides.
 */
function checkAdminToken(token: string, source: string): string {
  const weak = weakTokenReason(token);
  if (weak) throw new ConfigError(`${source} ${weak}; a random one: openssl rand -hex 32`);
  return token;
}

/**
 * ADMIN_TOKEN from the environment, else the one saved in DATA_DIR on an earlier start, else a new one,
 * saved (mode 0600 in a 0700 DATA_DIR, so the CLI on this machine finds it and nobody else reads it) and
 * returned with `created` so it is printed once. A weak token (checkAdminToken) stops the boot (ConfigError
 * naming where it came from).
 */
export function resolveAdminToken(envToken: string | undefined, dataDir: string): { token: string; created: boolean } {
  if (envToken) return { token: checkAdminToken(envToken, "ADMIN_TOKEN"), created: false };
  const file = join(dataDir, "admin-token");
  if (existsSync(file))
    return {
      token: checkAdminToken(readFileSync(file, "utf8").trim(), `the admin token saved in ${file}`),
      created: false,
    };
  privateDirSync(dataDir);
  const token = `adm_${newSecret(24)}`;
  writePrivateFileSync(file, `${token}\n`);
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
  const { n } = await db
    .selectFrom("partners")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .executeTakeFirstOrThrow();
  if (Number(n) > 0) return undefined;
  const { partner, apiKey } = await kernel.accounts.create({ name: "Demo partner", credits: DEMO_CREDITS });
  await db
    .insertInto("settings")
    .values({ key: "demo_partner", value: JSON.stringify({ partner_id: partner.id }) })
    .onConflict((oc) => oc.column("key").doNothing())
    .execute();
  return apiKey;
}
