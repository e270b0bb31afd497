// Connection loss is survivable (issue 46, deliverable 3): an API and a worker process on one Postgres database,
// under a load of charged submits (a transaction each, in the API) and image jobs (whose attempts write in
// transactions, in the worker), while the test terminates their backends that are in the middle of something
// (`idle in transaction` or `active`, found in pg_stat_activity) with pg_terminate_backend, round after round.
// Before, the first terminated idle-in-transaction connection ended the process ("Emitted 'error' event on
// Client instance"). Now: both processes stay up, the statements in flight fail (the requests answer an error,
// the attempts are retried), and once the terminations stop, requests work, every job ends, and the balance is
// the ledger's sum.
//
// Postgres only: PGlite has no connections to lose.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { isolatedPostgresDatabase, postgresUrl } from "../helpers/backends.ts";
import {
  assertAlive,
  assertRecovered,
  createPartner,
  type Pair,
  readDatabase,
  startLoad,
  startPair,
} from "../helpers/db-faults.ts";
import { sleep } from "../helpers/restart.ts";

const t = suite("Postgres connections terminated under load");
let pair: Pair | undefined;
t.after.each(async () => {
  await pair?.stop();
  pair = undefined;
});

/** How long the terminations go on. */
const FAULT_MS = 8_000;

((await postgresUrl()) ? t : t.skip)(
  "API and worker survive terminated backends mid-transaction; afterwards requests work and every job ends",
  async () => {
    const databaseUrl = await isolatedPostgresDatabase();
    const name = new URL(databaseUrl).pathname.slice(1);
    pair = await startPair(databaseUrl);
    const partner = await createPartner(pair.api);
    const load = startLoad(pair.api, partner.key);

    // Round after round until FAULT_MS: every backend of the two processes that is inside a transaction or
    // running a statement. Counted by process and by state.
    const terminated: Record<string, number> = {};
    const until = Date.now() + FAULT_MS;
    while (Date.now() < until) {
      const rows = await readDatabase(
        databaseUrl,
        async (c) =>
          (
            await c.query(
              `select application_name as app, state, pg_terminate_backend(pid) as done from pg_stat_activity
            where datname = $1 and pid <> pg_backend_pid() and application_name in ('mg-api', 'mg-worker')
              and state in ('idle in transaction', 'active')`,
              [name],
            )
          ).rows,
      );
      for (const r of rows)
        if (r.done) terminated[`${r.app} ${r.state}`] = (terminated[`${r.app} ${r.state}`] ?? 0) + 1;
      assertAlive(pair);
      await sleep(100);
    }
    const counts = await load.stop();
    console.log(`  terminated: ${JSON.stringify(terminated)}; load: ${JSON.stringify(counts)}`);
    assertAlive(pair);
    const byProcess = (app: string) =>
      Object.entries(terminated).reduce((n, [k, v]) => n + (k.startsWith(app) ? v : 0), 0);
    assert.ok(byProcess("mg-api") > 0, `no API backend was terminated: ${JSON.stringify(terminated)}`);
    assert.ok(byProcess("mg-worker") > 0, `no worker backend was terminated: ${JSON.stringify(terminated)}`);
    assert.is(counts.unanswered, 0, `every request was answered\n${pair.logs()}`);
    assert.ok(counts.accepted > 0, "submits were accepted while connections were terminated");

    const states = await assertRecovered(pair, partner, databaseUrl);
    console.log(`  jobs: ${JSON.stringify(states)}`);
    assertAlive(pair);
  },
);

t.run();
