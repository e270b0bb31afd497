// Service-wide pause switches: a plugin declares the ones it honours; operators flip them through the admin
// API; every request reads the current state (so every process sees a flip at once); an undeclared switch is
// a programming error, not a silent "not paused". On every database backend.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { definePlugin, operation } from "../../core/plugin.ts";
import { ApiError } from "../../lib/api-error.ts";
import account from "../../plugins/account/index.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { errorBody } from "../helpers/error-body.ts";
import { generousLimits } from "../helpers/test-limits.ts";

const pausable = definePlugin({
  name: "pausable",
  pauses: ["printing"],
  rateLimits: generousLimits("POST /print", "POST /sneak"),
  operations: [
    operation({
      method: "POST",
      path: "/print",
      async handle(ctx) {
        if (await ctx.isPaused("printing")) throw new ApiError(503, "Printing is paused right now.");
        return { printed: true };
      },
    }),
    operation({
      method: "POST",
      path: "/sneak",
      async handle(ctx) {
        return { paused: await ctx.isPaused("someone-elses") };
      },
    }),
  ],
});

for (const backend of await databaseBackends()) {
  const t = suite(`pause switches on ${backend.name}`);
  let tk: TestKernel;
  const admin = (method: string, path: string, body?: unknown) =>
    tk.request(method, `/api/v1/admin${path}`, { body, headers: { authorization: `Bearer ${tk.adminToken}` } });
  t.before.each(async () => {
    tk = await createTestKernel({
      plugins: [account, pausable],
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
    });
  });
  t.after.each(async () => {
    await tk.close();
  });

  t("operators list and flip declared switches; requests see the flip at once", async () => {
    const { key } = await tk.partner();
    assert.equal((await admin("GET", "/pauses")).body.pauses, { printing: false });
    assert.is((await tk.request("POST", "/print", { key })).status, 200);
    const on = await admin("PUT", "/pauses/printing", { paused: true });
    assert.is(on.status, 200);
    assert.equal({ name: on.body.name, paused: on.body.paused }, { name: "printing", paused: true });
    const refused = await tk.request("POST", "/print", { key });
    assert.is(refused.status, 503);
    assert.is(refused.body.error, "Printing is paused right now.");
    assert.equal((await admin("GET", "/pauses")).body.pauses, { printing: true });
    await admin("PUT", "/pauses/printing", { paused: false });
    assert.is((await tk.request("POST", "/print", { key })).status, 200);
  });

  t("unknown switches, bad bodies and missing tokens are refused; undeclared reads fail loudly", async () => {
    const { key } = await tk.partner();
    assert.equal(errorBody(await admin("PUT", "/pauses/teleport", { paused: true })), {
      error: "Unknown pause switch: teleport",
    });
    assert.is((await admin("PUT", "/pauses/printing", { paused: "yes" })).status, 400);
    assert.is((await tk.request("PUT", "/api/v1/admin/pauses/printing", { body: { paused: true } })).status, 401);
    assert.is((await tk.request("POST", "/sneak", { key })).status, 500);
    assert.equal((await admin("GET", "/pauses")).body.pauses, { printing: false });
  });

  t.run();
}
