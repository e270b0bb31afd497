// A kysely dialect over PGlite (Postgres compiled to WASM, one connection).
//
// PGlite serializes `query()` and `transaction()` through one internal mutex, so a plain query from anyone
// else (pg-boss polling, another request) waits while a transaction is open instead of landing inside it.
// We keep that property by running every kysely transaction inside `pglite.transaction()` and holding the
// callback open until kysely commits or rolls back. The price: a transaction blocks the whole database, so
// callers must never await network, blob, queue or media work inside one (docs/architecture.md "PGlite has one connection").
//
// PGlite's mutex is first come, first served. Under a burst, hundreds of requests' statements wait in it, and
// a statement of the job queue (pg-boss's fetch, complete or heartbeat, which reach PGlite directly through
// storage/queue.ts) or of a job would wait behind all of them: no job would start before the last request of
// the burst was answered. So the application's statements and transactions first take the one place of a
// ConnectionGate (storage/connection-gate.ts): at most one of them waits in PGlite's mutex, so a queue statement waits
// behind that one only, and a job's statements take turns with the requests'. It costs nothing in
// throughput, since PGlite runs one statement at a time anyway. One gate serves two dialects, one per lane
// (storage/db.ts makes both).
import type { PGlite, Transaction } from "@electric-sql/pglite";
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
} from "kysely";
import type { ConnectionGate, Priority } from "./connection-gate.ts";

class PGliteConnection implements DatabaseConnection {
  #tx: Transaction | undefined;
  #finish: ((commit: boolean) => void) | undefined;
  #settled: Promise<void> | undefined;
  #release: (() => void) | undefined;

  constructor(
    private readonly pglite: PGlite,
    private readonly gate: ConnectionGate,
    private readonly priority: Priority,
  ) {}

  async begin(): Promise<void> {
    this.#release = await this.gate.acquire(this.priority);
    try {
      await this.open();
    } catch (err) {
      this.leave();
      throw err;
    }
  }

  private leave(): void {
    const release = this.#release;
    this.#release = undefined;
    release?.();
  }

  private async open(): Promise<void> {
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
      this.leave();
    }
  }

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    let result;
    if (this.#tx) {
      result = await this.#tx.query<R>(compiled.sql, compiled.parameters as unknown[]);
    } else {
      const release = await this.gate.acquire(this.priority);
      try {
        result = await this.pglite.query<R>(compiled.sql, compiled.parameters as unknown[]);
      } finally {
        release();
      }
    }
    return {
      rows: result.rows,
      numAffectedRows: result.affectedRows === undefined ? undefined : BigInt(result.affectedRows),
    };
  }

  // biome-ignore lint/correctness/useYield: PGlite cannot stream; kysely's Driver asks for a generator all the same
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error("streaming queries are not supported on PGlite");
  }
}

class PGliteDriver implements Driver {
  constructor(
    private readonly pglite: PGlite,
    private readonly gate: ConnectionGate,
    private readonly priority: Priority,
  ) {}
  async init(): Promise<void> {
    await this.pglite.waitReady;
  }
  async acquireConnection(): Promise<DatabaseConnection> {
    return new PGliteConnection(this.pglite, this.gate, this.priority);
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

/** Statements on `pglite` that take `gate`'s one connection at `priority`. */
export class PGliteDialect implements Dialect {
  constructor(
    private readonly pglite: PGlite,
    private readonly gate: ConnectionGate,
    private readonly priority: Priority,
  ) {}
  createAdapter() {
    return new PostgresAdapter();
  }
  createDriver(): Driver {
    return new PGliteDriver(this.pglite, this.gate, this.priority);
  }
  createQueryCompiler() {
    return new PostgresQueryCompiler();
  }
  createIntrospector(db: Kysely<any>) {
    return new PostgresIntrospector(db);
  }
}
