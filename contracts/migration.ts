// A migration, as the kernel and every plugin declare theirs (a plugin's usually from lib/record-tables.ts
// tablesMigration); storage/migrate.ts runs them, the kernel's first, each once.
export interface Migration {
  /** Unique and stable: `<plugin>/<nnnn>_<what>`. */
  name: string;
  /** One SQL statement each (PGlite's extended protocol takes one statement per query). */
  statements: string[];
}
