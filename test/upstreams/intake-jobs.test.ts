// An upstream output that lies about itself, end to end (issue 39 item 5): an image model routed to the fal
// stand-in (testkit/standins/fal.ts), whose result names an HTML page served as a PNG, or a PNG of zero bytes.
// The job fails with the images area's sanitized text and the partner is refunded exactly once; the output's
// URL appears neither in the answer nor in anything logged. On every database backend, workers running.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Logger } from "../../core/log.ts";
import account from "../../plugins/account/index.ts";
import { IMAGE_ERRORS } from "../../plugins/images/errors.ts";
import images from "../../plugins/images/index.ts";
import imagesSandbox from "../../plugins/images/sandbox.ts";
import upstreams from "../../plugins/upstreams/index.ts";
import { type FalStandIn, startFalStandIn } from "../../testkit/standins/fal.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { suiteKernel } from "../helpers/kernel-suite.ts";
import { ledgerSum } from "../helpers/partner-reads.ts";
import { imageFinished, providersEnv, ROUTED_ENV } from "./helpers.ts";

/** What the kernel logs, kept as text (every detail serialized) so a URL anywhere in it is found. */
function recordingLogger(): Logger & { text(): string } {
  const lines: string[] = [];
  const describe = (d: unknown) =>
    d instanceof Error
      ? `${d.name}: ${d.message} ${String((d as { cause?: unknown }).cause ?? "")}`
      : JSON.stringify(d);
  const at =
    (level: string) =>
    (message: string, ...details: unknown[]) =>
      void lines.push(`${level} ${message} ${details.map(describe).join(" ")}`);
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), text: () => lines.join("\n") };
}

/** Each image model's lie, and what intake says of it in the log. */
const LIARS = {
  "image-a-pro": ["html-as-png", "the upstream's image is not a picture"],
  "image-b-2": ["empty-png", "the upstream's image is empty"],
} as const;

for (const backend of await databaseBackends()) {
  const t = suite(`an upstream output that lies fails once, refunded, on ${backend.name}`);
  let fal: FalStandIn;
  const log = recordingLogger();
  const env: Record<string, string> = { ...ROUTED_ENV };
  // Before the kernel's own `before`: the providers file names the stand-in's port.
  t.before(async () => {
    fal = await startFalStandIn({
      output: (model) => (model.endsWith("/html") ? "html-as-png" : model.endsWith("/empty") ? "empty-png" : "images"),
    });
    const routes = {
      "image-a-pro": [{ provider: "fal", model: "fal-ai/liar/html" }],
      "image-b-2": [{ provider: "fal", model: "fal-ai/liar/empty" }],
    };
    Object.assign(env, providersEnv({ fal }, routes));
  });
  const tk = suiteKernel(t, backend, {
    plugins: [account, imagesSandbox, upstreams, images],
    start: true,
    env,
    logger: log,
  });
  t.after(async () => {
    await fal?.close();
  });

  for (const [model, [lie, said]] of Object.entries(LIARS)) {
    t(`${lie}: the job fails with the sanitized text, one refund, the output's URL nowhere`, async () => {
      const { id, key } = await tk.partner({ credits: 100 });
      const prompt = `A lighthouse (${lie})`;
      const res = await tk.request("POST", "/generate-image", { key, body: { prompt, model } });
      assert.is(res.status, 202, JSON.stringify(res.body));
      assert.ok(res.body.credits_remaining < 100, "charged");
      const done = await imageFinished(tk, key, res.body.generation_id);
      assert.is(done.body.status, "failed", JSON.stringify(done.body));
      assert.is(done.body.error, IMAGE_ERRORS.failed);
      assert.is((await tk.request("GET", "/credits", { key })).body.credits_remaining, 100);
      const ledger = await tk.request("GET", "/transactions", { key });
      assert.is(ledger.body.transactions.filter((x: { type: string }) => x.type === "refund").length, 1);
      assert.is(await ledgerSum(tk, id), 100);
      // The stand-in did answer with its file's URL; it reached neither the partner nor the logs.
      const request = [...fal.submitted.values()].find((r) => r.input.prompt === prompt)!;
      const outputUrl = JSON.stringify(request.result).match(/http:\/\/127\.0\.0\.1:\d+\/files\/[^"]+/)?.[0];
      assert.ok(outputUrl, JSON.stringify(request.result));
      assert.not.ok(JSON.stringify(done.body).includes("/files/"));
      assert.ok(log.text().includes(said), "intake's reason is logged");
      assert.not.ok(log.text().includes(outputUrl!), "the output URL was logged");
    });
  }

  t("the service's key appears in nothing the kernel logged, after every job above", () => {
    assert.ok(log.text().length > 0, "the kernel logged");
    assert.not.ok(log.text().includes(fal.key), "the fal key was logged");
  });

  t.run();
}
