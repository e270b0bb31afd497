// A test process whose test kit fails to boot: it prints the error and returns, and must then exit on its own
// (test/boot/clashes.test.ts runs it). Postgres and Redis from KIT_DATABASE_URL and KIT_REDIS_URL when set.
import process from "node:process";
import type { CapabilityName } from "../../contracts/index.ts";
import { definePlugin, type PluginDeclaration } from "../../core/plugin.ts";
import { BootError } from "../../core/registry.ts";
import account from "../../plugins/account/index.ts";
import { createTestKernel } from "../../testkit/index.ts";

// Fails after the kit opened its database and stores and the kernel migrated: a capability factory throws.
const broken = definePlugin({
  name: "broken",
  provides: {
    ["test.engine" as CapabilityName]: () => {
      throw new BootError('plugin "broken": no engine here');
    },
  } as unknown as PluginDeclaration["provides"],
});

const err = await createTestKernel({
  plugins: [account, broken],
  databaseUrl: process.env.KIT_DATABASE_URL || undefined,
  redisUrl: process.env.KIT_REDIS_URL || undefined,
}).then(
  () => null,
  (e: unknown) => e,
);
console.log(err instanceof BootError ? `boot error: ${err.message}` : `no boot error: ${String(err)}`);
