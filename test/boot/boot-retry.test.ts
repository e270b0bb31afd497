// A boot whose database or Redis connection drops midway (a terminated backend: the chaos test's case) is tried
// again; a boot that fails for any other reason, or stays out of reach, fails with its own error.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { retryWhileUnreachable } from "../../core/boot-retry.ts";
import type { Logger } from "../../core/log.ts";
import { BootError } from "../../core/registry.ts";

const t = suite("boot retry");

function recordingLog() {
  const warnings: Array<Record<string, unknown>> = [];
  const nothing = () => {};
  const log = {
    debug: nothing,
    info: nothing,
    error: nothing,
    access: nothing,
    warn: (_message: string, fields?: unknown) => warnings.push(fields as Record<string, unknown>),
  } as unknown as Logger;
  return { log, warnings };
}

/** What node-postgres throws when pg_terminate_backend ends the connection, and a reset socket. */
const terminated = () =>
  Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" });
const reset = () => Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });

t("a connection lost twice during the boot: the third try boots, each retry logged", async () => {
  const { log, warnings } = recordingLog();
  const failures = [terminated(), reset()];
  let tries = 0;
  const booted = await retryWhileUnreachable(log, async () => {
    tries++;
    const failure = failures.shift();
    if (failure) throw failure;
    return "kernel";
  });
  assert.is(booted, "kernel");
  assert.is(tries, 3);
  assert.equal(
    warnings.map((w) => w.reason),
    ["terminating connection due to administrator command", "read ECONNRESET"],
  );
});

t("a refusal that is not a lost connection fails at once", async () => {
  const { log, warnings } = recordingLog();
  let tries = 0;
  const refusal = new BootError('plugin "images" and plugin "copy" both declare POST /images');
  const err = await retryWhileUnreachable(log, async () => {
    tries++;
    throw refusal;
  }).catch((e: unknown) => e);
  assert.is(err, refusal);
  assert.is(tries, 1);
  assert.is(warnings.length, 0);
});
t.run();
