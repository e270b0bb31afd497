// Retention: a file put with `expiresAt` through any plugin's scoped store is removed by the sweeper once the
// window has passed, and not before; rewriting it without a window keeps it; removing it forgets it. Service
// media URLs read back from storage. On every database backend, because the sweeper's query is SQL.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { z } from "zod";
import { createLogger } from "../../core/log.ts";
import { definePlugin, operation } from "../../core/plugin.ts";
import { createRetentionSweeper } from "../../core/retention.ts";
import account from "../../plugins/account/index.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { generousLimits } from "../helpers/test-limits.ts";

const DAY = 24 * 3600 * 1000;

// A stand-in area that keeps files for a window, and reads service URLs, the way metadata removal does.
const keeper = definePlugin({
  name: "keeper",
  requires: ["service-media"],
  rateLimits: generousLimits("POST /keep", "POST /read-back"),
  operations: [
    operation({
      method: "POST",
      path: "/keep",
      input: z.object({ name: z.string(), days: z.number().nullable() }),
      async handle(ctx) {
        const expiresAt = ctx.input.days === null ? undefined : new Date(ctx.clock.now() + ctx.input.days * DAY);
        await ctx.blobs.put(`files/${ctx.input.name}`, new TextEncoder().encode(ctx.input.name), {
          contentType: "text/plain",
          expiresAt,
        });
        return { url: ctx.mediaUrl(`files/${ctx.input.name}`) };
      },
    }),
    operation({
      method: "POST",
      path: "/read-back",
      input: z.object({ url: z.string() }),
      async handle(ctx) {
        const found = await ctx.capability("service-media").read(ctx.input.url);
        return found.kind === "found"
          ? { kind: found.kind, text: new TextDecoder().decode(found.bytes), plugin: found.plugin, key: found.key }
          : { kind: found.kind };
      },
    }),
  ],
});

for (const backend of await databaseBackends()) {
  const t = suite(`retention on ${backend.name}`);
  let tk: TestKernel;
  t.before.each(async () => {
    tk = await createTestKernel({
      plugins: [account, keeper],
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
      env: { PUBLIC_URL: "https://media.example.test" },
    });
  });
  t.after.each(async () => {
    await tk?.close();
  });

  const has = (name: string) => tk.kernel.blobs.has(`keeper/files/${name}`);

  t("a file with a window is removed once it passes, not before; files without one stay", async () => {
    const { key } = await tk.partner();
    for (const [name, days] of [
      ["week", 7],
      ["day", 1],
      ["forever", null],
    ] as const) {
      assert.is((await tk.request("POST", "/keep", { key, body: { name, days } })).status, 200);
    }
    assert.is(await tk.kernel.retention.sweep(), 0);
    tk.clock.advance(DAY + 1000);
    assert.is(await tk.kernel.retention.sweep(), 1);
    assert.is(await has("day"), false);
    assert.is(await has("week"), true);
    tk.clock.advance(6 * DAY);
    assert.is(await tk.kernel.retention.sweep(), 1);
    assert.is(await has("week"), false);
    assert.is(await has("forever"), true);
    assert.is(await tk.kernel.retention.sweep(), 0);
  });

  t("a rewrite moves or drops the window; a removal forgets it", async () => {
    const { key } = await tk.partner();
    await tk.request("POST", "/keep", { key, body: { name: "a", days: 1 } });
    await tk.request("POST", "/keep", { key, body: { name: "a", days: 3 } });
    await tk.request("POST", "/keep", { key, body: { name: "b", days: 1 } });
    await tk.request("POST", "/keep", { key, body: { name: "b", days: null } });
    await tk.request("POST", "/keep", { key, body: { name: "c", days: 1 } });
    await tk.kernel.blobs.scoped("keeper").remove("files/c");
    const rows = await tk.kernel.database.kysely
      .selectFrom("retained_blobs" as any)
      .select(["key"])
      .orderBy("key")
      .execute();
    assert.equal(
      rows.map((r: any) => r.key),
      ["keeper/files/a"],
    );
    tk.clock.advance(2 * DAY);
    await tk.kernel.retention.sweep();
    assert.is(await has("a"), true);
    assert.is(await has("b"), true);
    tk.clock.advance(2 * DAY);
    await tk.kernel.retention.sweep();
    assert.is(await has("a"), false);
  });

  t("service media URLs are read from storage; others are external; a swept file is missing", async () => {
    const { key } = await tk.partner();
    const name = `${"a1".repeat(16)}.txt`; // a name /media serves: 128 random bits (lib/service-media.ts)
    const { url } = (await tk.request("POST", "/keep", { key, body: { name, days: 1 } })).body;
    let res = await tk.request("POST", "/read-back", { key, body: { url } });
    assert.equal(res.body, {
      request_id: res.body.request_id,
      kind: "found",
      text: name,
      plugin: "keeper",
      key: `files/${name}`,
    });
    const kinds: [string, "external" | "missing"][] = [
      ["https://elsewhere.example/media/keeper/files/x.txt", "external"],
      ["not a url", "external"],
      ["https://media.example.test/other/keeper/files/x.txt", "external"],
      ["https://media.example.test/media/keeper/files/..%2F..%2Fsecret", "missing"],
      ["https://media.example.test/media/keeper", "missing"],
      ["https://media.example.test/media/keeper/files/none.txt", "missing"],
    ];
    for (const [other, kind] of kinds) {
      res = await tk.request("POST", "/read-back", { key, body: { url: other } });
      assert.is(res.body.kind, kind, other);
    }
    tk.clock.advance(DAY + 1);
    await tk.kernel.retention.sweep();
    res = await tk.request("POST", "/read-back", { key, body: { url } });
    assert.is(res.body.kind, "missing");
  });

  t("a file the store cannot remove is kept and tried again, not forgotten", async () => {
    const db = tk.kernel.database.kysely;
    await db
      .insertInto("retained_blobs" as any)
      .values({ key: "keeper/files/stuck", expires_at: new Date(tk.clock.now() - 1000) })
      .execute();
    let failing = true;
    const removed: string[] = [];
    const store = {
      ...tk.kernel.blobs,
      remove: async (key: string) => (failing ? Promise.reject(new Error("disk busy")) : void removed.push(key)),
    };
    const sweeper = createRetentionSweeper({
      db,
      blobs: store,
      clock: tk.clock,
      log: createLogger("silent"),
      intervalMs: 60_000,
    });
    assert.is(await sweeper.sweep(), 0);
    const row = await db
      .selectFrom("retained_blobs" as any)
      .select(["expires_at"])
      .where("key", "=", "keeper/files/stuck")
      .executeTakeFirstOrThrow();
    assert.ok(new Date((row as any).expires_at).getTime() > tk.clock.now(), "retried a sweep later");
    failing = false;
    tk.clock.advance(61_000);
    assert.is(await sweeper.sweep(), 1);
    assert.equal(removed, ["keeper/files/stuck"]);
    assert.is(
      (
        await db
          .selectFrom("retained_blobs" as any)
          .selectAll()
          .execute()
      ).length,
      0,
    );
  });

  t.run();
}
