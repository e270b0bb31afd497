// The relational database: PGlite in DATA_DIR by default, Postgres when DATABASE_URL is set. One kysely
// instance either way; the handles pg-boss needs (the PGlite instance, or the connection string) ride along.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { Kysely, PostgresDialect } from "kysely";
import pg from "pg";
import { PGliteDialect } from "./pglite-dialect.ts";
import type { KernelTables } from "./tables.ts";

export type DatabaseKind = "pglite" | "postgres";

export interface Database {
  kind: DatabaseKind;
  kysely: Kysely<KernelTables>;
  /** Set for kind "pglite": pg-boss shares this one connection. */
  pglite?: PGlite;
  /** Set for kind "postgres": pg-boss opens its own pool on the same database. */
  connectionString?: string;
  close(): Promise<void>;
}

// Credits are bigint columns and sums come back as numeric; both fit a JS number for any real balance,
// and integer math on numbers is what the ledger code is written in.
const INT8 = 20;
const NUMERIC = 1700;
const toNumber = (value: string) => Number(value);

export interface OpenDatabaseOptions {
  /** Postgres connection string; when absent, PGlite is used. */
  url?: string;
  /** PGlite data directory; when absent (tests), PGlite lives in memory. */
  dataDir?: string;
  /** Postgres pool size. */
  poolSize?: number;
}

export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  if (options.url) {
    const pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize ?? 10,
      types: {
        getTypeParser: ((oid: number, format?: "text" | "binary") =>
          oid === INT8 || oid === NUMERIC ? toNumber : pg.types.getTypeParser(oid, format as any)) as any,
      },
    });
    const kysely = new Kysely<KernelTables>({ dialect: new PostgresDialect({ pool }) });
    return {
      kind: "postgres",
      kysely,
      connectionString: options.url,
      close: () => kysely.destroy(),
    };
  }
  let dataPath: string | undefined;
  if (options.dataDir) {
    mkdirSync(options.dataDir, { recursive: true });
    dataPath = join(options.dataDir, "pgdata");
  }
  const pglite = new PGlite(dataPath, { parsers: { [INT8]: toNumber, [NUMERIC]: toNumber } });
  await pglite.waitReady;
  const kysely = new Kysely<KernelTables>({ dialect: new PGliteDialect(pglite) });
  return {
    kind: "pglite",
    kysely,
    pglite,
    close: async () => {
      await kysely.destroy();
      await pglite.close();
    },
  };
}

/** True for a unique-constraint violation, on both backends. */
export function isUniqueViolation(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { code?: string }).code === "23505";
}
