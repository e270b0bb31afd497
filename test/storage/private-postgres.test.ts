// The private Postgres server of test/helpers/private-postgres.ts: made, queried, stopped (a client then
// fails to connect), started again with its data kept, and removed.

import { existsSync } from "node:fs";
import pg from "pg";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { privatePostgres } from "../helpers/private-postgres.ts";

async function query(url: string, text: string): Promise<any[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  client.on("error", () => {});
  await client.connect();
  try {
    return (await client.query(text)).rows;
  } finally {
    await client.end().catch(() => {});
  }
}

test("a private server starts, stops, starts again with its data, and is removed", async () => {
  const server = await privatePostgres();
  if (!server) return;
  const url = await server.createDatabase("selftest");
  await query(url, "create table t (n int); insert into t values (1)");
  await server.stop("immediate");
  assert.is(server.running, false);
  const refused = await query(url, "select 1").then(
    () => null,
    (err: Error) => err,
  );
  assert.ok(refused, "a stopped server refuses connections");
  await server.start();
  assert.equal(await query(url, "select n from t"), [{ n: 1 }]);
  await server.restart("fast");
  assert.equal(await query(url, "select n from t"), [{ n: 1 }]);
  await server.destroy();
  assert.is(existsSync(server.dataDir), false);
});

test.run();
