// A kysely dialect over PGlite (Postgres compiled to WASM, one connection).
//
// PGlite serializes `query()` and `transaction()` through one internal mutex, so a plain query from anyone
// else (pg-boss polling, another request) waits while a transaction is open instead of landing inside it.
// We keep that property by running every kysely transaction inside `pglite.transaction()` and holding the
// callback open until kysely commits or rolls back. The price: a transaction blocks the whole database, so
// callers must never await network, blob, queue or media work inside one (DESIGN: "PGlite has one connection").
import type { PGlite, Transaction } from "@electric-sql/pglite";
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
} from "kysely";

class PGliteConnection implements DatabaseConnection {
  #tx: Transaction | undefined;
  #finish: ((commit: boolean) => void) | undefined;
  #settled: Promise<void> | undefined;

  constructor(private readonly pglite: PGlite) {}

  async begin(): Promise<void> {
    let opened!: () => void;
    const ready = new Promise<void>((resolve) => (opened = resolve));
    const decision = new Promise<boolean>((resolve) => (this.#finish = resolve));
    this.#settled = this.pglite.transaction(async (tx) => {
      this.#tx = tx;
      opened();
      if (!(await decision)) await tx.rollback();
    });
    // BEGIN itself can fail; surface that instead of waiting forever for `opened`.
    await Promise.race([ready, this.#settled]);
  }

  async end(commit: boolean): Promise<void> {
    this.#finish?.(commit);
    try {
      await this.#settled;
    } finally {
      this.#tx = undefined;
      this.#finish = undefined;
      this.#settled = undefined;
    }
  }

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const target = this.#tx ?? this.pglite;
    const result = await target.query<R>(compiled.sql, compiled.parameters as unknown[]);
    return {
      rows: result.rows,
      numAffectedRows: result.affectedRows === undefined ? undefined : BigInt(result.affectedRows),
    };
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error("streaming queries are not supported on PGlite");
  }
}

class PGliteDriver implements Driver {
  constructor(private readonly pglite: PGlite) {}
  async init(): Promise<void> {
    await this.pglite.waitReady;
  }
  async acquireConnection(): Promise<DatabaseConnection> {
    return new PGliteConnection(this.pglite);
  }
  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as PGliteConnection).begin();
  }
  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as PGliteConnection).end(true);
  }
  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as PGliteConnection).end(false).catch(() => {});
  }
  async releaseConnection(): Promise<void> {}
  async destroy(): Promise<void> {}
}

export class PGliteDialect implements Dialect {
  constructor(private readonly pglite: PGlite) {}
  createAdapter() {
    return new PostgresAdapter();
  }
  createDriver(): Driver {
    return new PGliteDriver(this.pglite);
  }
  createQueryCompiler() {
    return new PostgresQueryCompiler();
  }
  createIntrospector(db: Kysely<any>) {
    return new PostgresIntrospector(db);
  }
}
