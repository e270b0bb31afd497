// Prompt repair whose partner stops waiting (issue 36 item 5), on every database backend. The endpoint waits
// for its queued repair job; when the partner hangs up (or its wait passes, the same path) the request ends the
// repair itself, failed and refunded, unless the worker ended it first. Here the text model is still thinking
// when the partner hangs up: the request refunds the repair once and answers 502 `... Credits refunded.`;
// when the model then answers, the worker's late ending finds the repair ended and makes no clip.

import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { sql } from "kysely";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { OMNI_ERRORS } from "../../plugins/omni/errors.ts";
import type { TestKernel } from "../../testkit/index.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { onAfterAll } from "../helpers/lifecycle.ts";
import { balance, ledgerSum } from "../helpers/partner-reads.ts";
import { chatCompletion, finishedClip, OMNI_LIMITS, omniKernel } from "./helpers.ts";

// The text model: holds every request until released.
let arrived: () => void = () => {};
const held: ServerResponse[] = [];
const model = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    held.push(res);
    arrived();
  });
});
const release = () => {
  for (const res of held.splice(0))
    res.writeHead(200, { "content-type": "application/json" }).end(chatCompletion("A calm knight"));
};
onAfterAll(async () => {
  model.closeAllConnections();
  if (model.listening) await new Promise<void>((r) => model.close(() => r()));
});

for (const backend of await databaseBackends()) {
  const t = suite(`omni prompt repair: the partner hangs up on ${backend.name}`);
  let tk: TestKernel;
  t.before(async () => {
    if (!model.listening) await new Promise<void>((r) => model.listen(0, "127.0.0.1", r));
    tk = await omniKernel(backend, {
      TEXT_GENERATE_URL: `http://127.0.0.1:${(model.address() as AddressInfo).port}`,
      TEXT_GENERATE_MODEL: "test-model",
    });
  });
  t.after(async () => {
    release();
    await tk.close();
  });

  t("the request refunds the repair once and answers 502; the model's late answer makes no clip", async () => {
    const { key, id } = await tk.partner({ credits: 1000, limits: OMNI_LIMITS });
    const blocked = await finishedClip(tk, key, "A knight [sandbox:unsafe]");
    assert.is(blocked.prompt_fixable, true);
    const before = await balance(tk, key);

    const inCall = new Promise<void>((r) => (arrived = r));
    const hangUp = new AbortController();
    const request = new Request("http://mediagate.test/api/v1/partner/omni/improve-prompt", {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
        "user-agent": "mediagate-tests/1.0",
      },
      body: JSON.stringify({ job_id: blocked.job_id }),
      signal: hangUp.signal,
    });
    const answered = tk.fetch(request).then(async (res) => ({ status: res.status, body: await res.json() }));
    await inCall; // charged, and the worker is inside the text call
    hangUp.abort();
    const res = await answered;
    assert.equal([res.status, res.body.error], [502, OMNI_ERRORS.repairFailed]);

    const db = tk.kernel.database.kysely;
    const [job] = await db
      .selectFrom("jobs")
      .select(["id", "state", "error", "credits_used", "credits_refunded"])
      .where("partner_id", "=", id)
      .where("kind", "=", "repair")
      .execute();
    assert.equal(
      [job!.state, job!.error, Number(job!.credits_used), Number(job!.credits_refunded)],
      ["failed", OMNI_ERRORS.repairFailed, 2, 2],
    );
    assert.is(await balance(tk, key), before);

    // The model answers now; the worker's attempt ends (its queue job completes) without ending the repair again.
    release();
    const queueState = async () =>
      (
        await sql<{
          state: string;
        }>`select state from pgboss.job where name = 'omni.repair' and data->>'jobId' = ${job!.id}`.execute(db)
      ).rows.map((r) => r.state);
    const end = Date.now() + 60_000;
    let states = await queueState();
    while (!states.includes("completed")) {
      if (Date.now() > end) throw new Error(`the repair's attempt never finished: ${states.join(", ")}`);
      await new Promise((r) => setTimeout(r, 50));
      states = await queueState();
    }
    const listed = await tk.request("GET", "/omni/videos", { key });
    assert.equal(
      listed.body.videos.map((v: any) => v.job_id),
      [blocked.job_id],
      "no clip for a refunded repair",
    );
    const lines = await db
      .selectFrom("ledger")
      .select(["type", "amount"])
      .where("job_id", "=", job!.id)
      .orderBy("id")
      .execute();
    assert.equal(
      lines.map((l) => [l.type, Number(l.amount)]),
      [
        ["usage", -2],
        ["refund", 2],
      ],
    );
    assert.is(await balance(tk, key), before);
    assert.is(await ledgerSum(tk, id), before);
  });

  t.run();
}
