// Prompt repair survives a kill -9 of its server mid-repair (issue 36 item 5), on every database backend. The
// repair is charged, and its process killed while the text model is still thinking about the rewrite (a
// stand-in of the chat-completions API in this test process holds the request). After a restart on the same
// database the queue runs the repair again: it ends once, with the right money: the clip exists and completes,
// the account paid the repair's 2 credits once and nothing was refunded (before this change the orphaned
// repair was failed and refunded and no clip ever came).
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { databaseBackends } from "../helpers/backends.ts";
import { onAfterAll } from "../helpers/lifecycle.ts";
import { api, call, restartRig, until } from "../helpers/restart.ts";
import { chatCompletion } from "./helpers.ts";

const ADMIN_TOKEN = "adm_rP4xK8vN2mQ7tL9wB3zY6cH1jD5gF0sAeUoRiTy";
const OPENING = 1000;
const REWRITE = "A knight in a quiet forest at dawn";

// The text model: while `holding`, a request is kept unanswered (the repair is mid-call); otherwise it answers.
let holding = true;
let arrived: () => void = () => {};
const held: ServerResponse[] = [];
const model = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    if (holding) {
      held.push(res);
      arrived();
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(chatCompletion(REWRITE));
  });
});
onAfterAll(async () => {
  model.closeAllConnections();
  if (model.listening) await new Promise<void>((r) => model.close(() => r()));
});

for (const backend of await databaseBackends()) {
  const t = suite(`omni prompt repair: server killed mid-repair on ${backend.name}`);
  const rig = restartRig(t, backend, {
    adminToken: ADMIN_TOKEN,
    env: () => ({
      SANDBOX_LATENCY_MS: "20",
      ALLOW_PRIVATE_URLS: "1",
      PUBLIC_URL: "https://media.example.test",
      TEXT_GENERATE_URL: `http://127.0.0.1:${(model.address() as AddressInfo).port}`,
      TEXT_GENERATE_MODEL: "test-model",
    }),
  });
  const logs = rig.logs;

  t(
    "after the restart the repair ends once: its clip made and complete, 2 credits paid once, nothing refunded",
    async () => {
      if (!model.listening) await new Promise<void>((r) => model.listen(0, "127.0.0.1", r));
      holding = true;
      const first = await rig.start();
      const polls = { "GET /omni/video/<job_id>": 100_000, "GET /omni/videos": 100_000 };
      const { key } = await rig.partner(first, "Repair crash", OPENING, { rate_limits: polls });

      const submitted = await call(first, "POST", api("/omni/video"), {
        key,
        body: { prompt: "A knight [sandbox:unsafe] in a forest", duration: 4, aspect_ratio: "16:9" },
      });
      assert.is(submitted.status, 202, JSON.stringify(submitted.body));
      const sourceId: string = submitted.body.job_id;
      const blocked = await until(
        () => call(first, "GET", api(`/omni/video/${sourceId}`), { key }),
        (r) => r.body.status !== "processing",
        `the source blocked\n${logs()}`,
        60_000,
      );
      assert.equal([blocked.body.status, blocked.body.prompt_fixable], ["error", true], JSON.stringify(blocked.body));

      // The repair is charged and its worker is inside the text call when the process dies.
      const inCall = new Promise<void>((r) => (arrived = r));
      const pending = call(first, "POST", api("/omni/improve-prompt"), { key, body: { job_id: sourceId } }).catch(
        () => null,
      );
      await Promise.race([
        inCall,
        new Promise((_, reject) =>
          setTimeout(() => reject(new Error(`the repair never called the text model\n${logs()}`)), 60_000),
        ),
      ]);
      await first.kill();
      assert.is(await pending, null, "the request died with its process");
      for (const res of held.splice(0)) res.destroy();
      holding = false;

      const second = await rig.start();
      const listed = await until(
        () => call(second, "GET", api("/omni/videos"), { key }),
        (r) => r.status === 200 && r.body.videos.some((v: any) => v.job_id !== sourceId && v.status !== "processing"),
        `the repaired clip finished\n${logs()}`,
        180_000,
        250,
      );
      const clips = listed.body.videos.filter((v: any) => v.job_id !== sourceId);
      assert.is(clips.length, 1, "exactly one clip for the repair");
      assert.equal(
        [clips[0].status, clips[0].prompt, clips[0].credits_used, clips[0].credits_refunded],
        ["complete", REWRITE, 2, 0],
        JSON.stringify(clips[0]),
      );

      // The money: the source charged and refunded, the repair's 2 charged once, never refunded.
      const credits = await call(second, "GET", api("/credits"), { key });
      assert.is(credits.body.credits_remaining, OPENING - 2);
      const tx = await call(second, "GET", api("/transactions"), { key });
      const entries = tx.body.transactions.map((e: any) => [e.type, e.amount]);
      assert.equal(
        entries,
        [
          ["usage", -2],
          ["refund", 132],
          ["usage", -132],
          ["purchase", OPENING],
        ],
        JSON.stringify(tx.body.transactions),
      );
      assert.is(
        tx.body.transactions.reduce((sum: number, e: any) => sum + e.amount, 0),
        OPENING - 2,
      );
    },
  );

  t.run();
}
