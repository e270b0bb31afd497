// Prompt repair with a text model that answers what Postgres refuses (issue 45): a NUL, an unpaired surrogate
// and C1 controls in the rewritten prompt were a 500 when the new clip's row was written. The answer is
// upstream text, cleaned before it is stored (lib/upstream-text.ts): the repair answers 200 and the clip
// stores the cleaned prompt. The text plugin points at a local stand-in of the chat-completions API.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { TestKernel } from "../../testkit/index.ts";
import { chatCompletion, finishedClip, OMNI_LIMITS, omniKernel } from "./helpers.ts";

const t = suite("omni prompt repair: a model answering NUL and unpaired surrogates");
let tk: TestKernel;
let answer = "";
const sent: any[] = [];
const api = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    sent.push(JSON.parse(Buffer.concat(chunks).toString("utf8")));
    res.writeHead(200, { "content-type": "application/json" }).end(chatCompletion(answer));
  });
});

t.before(async () => {
  await new Promise<void>((r) => api.listen(0, "127.0.0.1", r));
  tk = await omniKernel(
    { name: "pglite" },
    { TEXT_GENERATE_URL: `http://127.0.0.1:${(api.address() as AddressInfo).port}`, TEXT_GENERATE_MODEL: "test-model" },
  );
});
t.after(async () => {
  await tk.close();
  api.closeAllConnections();
  await new Promise<void>((r) => api.close(() => r()));
});

t("the rewrite is cleaned before it is stored: 200, and the clip stores the cleaned prompt", async () => {
  const { key } = await tk.partner({ credits: 1000, limits: OMNI_LIMITS });
  const blocked = await finishedClip(tk, key, "A knight [sandbox:unsafe] in a forest");
  assert.is(blocked.prompt_fixable, true);
  answer = "A calm\u0000 knight\u0085 in a \ud800forest\u0007";
  const res = await tk.request("POST", "/omni/improve-prompt", { key, body: { job_id: blocked.job_id } });
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.is(res.body.improved_prompt, "A calm knight in a \ufffdforest");
  // The request carried a token cap (plugins/text/config.ts answerTokens).
  assert.type(sent.at(-1).max_tokens, "number");
  // The new clip's row holds the cleaned prompt (its render is test/omni/improve.test.ts's business).
  const clip = await tk.request("GET", `/omni/video/${res.body.job_id}`, { key });
  assert.is(clip.status, 200, JSON.stringify(clip.body));
  assert.is(clip.body.prompt, "A calm knight in a \ufffdforest");
});

t.run();
