// The scan that finds delayed jobs coming due (storage/queue-fetcher.ts), once per database backend: when one
// job of a queue is due and the next are due a moment later, each runs at its own time. The scan once learned
// only the soonest start of a queue: it fetched the job due now and forgot the rest until the rest interval
// (parked upstream polls a moment apart ran one on time and the others 10 s late).

import { PGlite } from "@electric-sql/pglite";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createQueue, type Queue, type QueueTarget } from "../../storage/queue.ts";
import { pgliteTemplate } from "../../testkit/pglite-template.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const backend of await databaseBackends()) {
  const t = suite(`queue scan on ${backend.name}`);
  let pglite: PGlite | undefined;
  let queue: Queue | undefined;
  const errors: unknown[] = [];

  t.after.each(async () => {
    await queue?.stop();
    await pglite?.close();
    queue = undefined;
    pglite = undefined;
  });

  t("delayed jobs due a moment apart each run at their time, not at the next rest scan", async () => {
    let target: QueueTarget;
    if (backend.name === "postgres") target = { kind: "postgres", connectionString: await isolatedPostgresDatabase() };
    else {
      pglite = new PGlite({ loadDataDir: await pgliteTemplate() }); // no initdb of its own (seconds under load)
      target = { kind: "pglite", pglite };
    }
    queue = createQueue(target, { onError: (err) => errors.push(err), stopTimeoutMs: 5000 });
    await queue.createQueue("test.later");
    const got: number[] = [];
    // A rest interval no test waits out: a job this process forgot would not run before the wait below ends.
    await queue.work<{ n: number }>("test.later", async (job) => void got.push(job.data.n), {
      concurrency: 4,
      pollingIntervalSeconds: 120,
    });
    for (let n = 0; n < 3; n++) {
      await queue.send("test.later", { n }, { startAfterSeconds: 1 });
      await sleep(300);
    }
    const end = Date.now() + 30_000;
    while (got.length < 3 && Date.now() < end) await sleep(50);
    assert.equal([...got].sort(), [0, 1, 2], `ran ${JSON.stringify(got)} of 3 within 30 s`);
    assert.equal(errors, []);
  });

  t.run();
}
