// The two lanes to the database (storage/connection-gate.ts): a freed place goes to background work first, a waiting
// request gets at least one place in four, requests keep every place when nothing else waits, and a place
// given back twice counts once, and a place handed on lets the event loop reach its I/O between holders, as
// do places taken at once one after another.
// And on each database, the lanes as opened (storage/db.ts): `background`'s statements take a freed
// connection before `kysely`'s, on the same connections.

import { sql } from "kysely";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { ConnectionGate, TURN_BUDGET_MS } from "../../storage/connection-gate.ts";
import { openDatabase } from "../../storage/db.ts";
import { pgliteTemplate } from "../../testkit/pglite-template.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";

const tick = () => new Promise((r) => setImmediate(r));

test("background work waiting gets a freed place before requests, a request at least one in four", async () => {
  const places = new ConnectionGate(1);
  const first = await places.acquire("requests");
  const order: string[] = [];
  const wait = (name: string, background: boolean) =>
    places.acquire(background ? "background" : "requests").then((release) => {
      order.push(name);
      release();
    });
  const all = [
    wait("r1", false),
    wait("r2", false),
    wait("b1", true),
    wait("b2", true),
    wait("b3", true),
    wait("b4", true),
    wait("b5", true),
    wait("r3", false),
  ];
  first();
  await Promise.all(all);
  assert.equal(order, ["b1", "b2", "b3", "r1", "b4", "b5", "r2", "r3"]);
});

test("requests alone are served first come, first served; a place given back twice counts once", async () => {
  const places = new ConnectionGate(2);
  const a = await places.acquire("requests");
  const b = await places.acquire("requests");
  const order: string[] = [];
  const waiting = ["r1", "r2", "r3"].map((name) =>
    places.acquire("requests").then((release) => (order.push(name), release)),
  );
  a();
  a(); // again: must not free a second place
  await tick();
  assert.equal(order, ["r1"]);
  b();
  const [r1, r2] = await Promise.all(waiting.slice(0, 2));
  assert.equal(order, ["r1", "r2"]);
  r1!();
  const r3 = await waiting[2]!;
  assert.equal(order, ["r1", "r2", "r3"]);
  r2!();
  r3!();
  // Both places are free again: two acquire at once, a third waits.
  const x = await places.acquire("requests");
  const y = await places.acquire("background");
  let third = false;
  void places.acquire("requests").then(() => (third = true));
  await tick();
  assert.not.ok(third);
  x();
  await tick();
  assert.ok(third);
  y();
});

test("a place handed on lets the event loop turn: I/O waiting is read between one holder and the next", async () => {
  const places = new ConnectionGate(1);
  const first = await places.acquire("requests");
  // Fifty holders queued, each doing a little work on this thread and giving its place back, as statements
  // on PGlite do. A socket's answer arriving meanwhile (here: a callback of the loop's next turn) must not
  // wait for all fifty: handed on in microtasks, it did.
  let held = 0;
  const holders = Array.from({ length: 50 }, () =>
    places.acquire("background").then((release) => {
      held++;
      release();
    }),
  );
  let heldWhenTheLoopTurned = -1;
  setImmediate(() => (heldWhenTheLoopTurned = held));
  first();
  await Promise.all(holders);
  assert.equal(held, 50);
  assert.ok(
    heldWhenTheLoopTurned >= 0 && heldWhenTheLoopTurned <= 2,
    heldWhenTheLoopTurned < 0
      ? "the loop did not turn until all 50 had held the place"
      : `the loop turned after ${heldWhenTheLoopTurned} of 50 holders`,
  );
});

test("places taken at once, one after another, let the event loop turn once the turn's budget is spent", async () => {
  const places = new ConnectionGate(1);
  // A hundred holders one after another, none ever waiting for the place (each takes it after the last gave
  // it back, in microtasks), each doing half a millisecond of work on this thread: statements on PGlite
  // whose caller runs the next at once. Without a turn the loop reached its I/O after all hundred.
  const spin = (ms: number) => {
    const until = performance.now() + ms;
    while (performance.now() < until);
  };
  let held = 0;
  let heldWhenTheLoopTurned = -1;
  setImmediate(() => (heldWhenTheLoopTurned = held));
  for (let i = 0; i < 100; i++) {
    const release = await places.acquire("requests");
    spin(0.5);
    held++;
    release();
  }
  assert.ok(
    heldWhenTheLoopTurned >= 1 && heldWhenTheLoopTurned <= 4 * (TURN_BUDGET_MS / 0.5),
    heldWhenTheLoopTurned < 0
      ? "the loop did not turn until all 100 had held the place"
      : `the loop turned after ${heldWhenTheLoopTurned} of 100 holders`,
  );
});

for (const backend of await databaseBackends()) {
  test(`${backend.name}: the background kysely's statements take a freed connection before the requests' kysely's`, async () => {
    // One connection, so every statement below waits for the transaction holding it.
    const database =
      backend.name === "postgres"
        ? await openDatabase({ url: await isolatedPostgresDatabase(), poolSize: 1 })
        : await openDatabase({ template: await pgliteTemplate() });
    try {
      let commit!: () => void;
      const held = new Promise<void>((resolve) => (commit = resolve));
      let holding!: () => void;
      const holds = new Promise<void>((resolve) => (holding = resolve));
      const holder = database.kysely.transaction().execute(async (trx) => {
        await sql`select 1`.execute(trx);
        holding();
        await held;
      });
      await holds;
      const order: string[] = [];
      const statement = (name: string, lane: "kysely" | "background") =>
        sql`select 1`.execute(database[lane]).then(() => void order.push(name));
      const waiting = [
        statement("r1", "kysely"),
        statement("r2", "kysely"),
        statement("b1", "background"),
        statement("b2", "background"),
      ];
      // Let every one of them reach the lanes before the connection is freed.
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
      commit();
      await Promise.all([holder, ...waiting]);
      assert.equal(order, ["b1", "b2", "r1", "r2"]);
    } finally {
      await database.close();
    }
  });
}

test.run();
