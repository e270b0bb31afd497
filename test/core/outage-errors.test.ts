// core/errors.ts outageError: the one mapping of an outage to what a partner is told (503 with Retry-After for
// something briefly out of reach, 507 for a full disk), over lib/transient.ts's classification; and the Redis
// clients' fast failure while Redis is out of reach (storage/counters.ts). The end-to-end cases, with a real
// server whose Postgres and Redis are cut, are test/api/outages.test.ts.
import net from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { OUTAGE_RETRY_AFTER_SECONDS, outageError } from "../../core/errors.ts";
import { ApiError } from "../../lib/api-error.ts";
import { KERNEL_ERRORS } from "../../lib/errors.ts";
import { isTransient } from "../../lib/transient.ts";
import { RedisUnreachableError, redisCounters } from "../../storage/counters.ts";
import { redisPubSub } from "../../storage/pubsub.ts";

const t = suite("outageError");

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

t("a connection lost or refused, a time-out, Redis reconnecting: 503 with Retry-After and the kernel's text", () => {
  for (const err of [
    withCode("connect ECONNREFUSED 127.0.0.1:5432", "ECONNREFUSED"),
    withCode("terminating connection due to administrator command", "57P01"),
    new Error("Connection terminated unexpectedly"),
    new Error("Command timed out"),
    new RedisUnreachableError("redis://127.0.0.1:6379"),
    new Error("wrapped", { cause: withCode("read ECONNRESET", "ECONNRESET") }),
  ]) {
    const answer = outageError(err);
    assert.ok(answer instanceof ApiError, err.message);
    assert.is(answer!.status, 503);
    assert.equal(answer!.body(), { error: KERNEL_ERRORS.serviceUnavailable });
    assert.equal(answer!.headers, { "Retry-After": String(OUTAGE_RETRY_AFTER_SECONDS) });
    assert.is(answer!.cause, err, "the cause rides along for the log");
  }
});

t("a full disk: 507, saying nothing was charged only when the caller knows it", () => {
  for (const code of ["ENOSPC", "EDQUOT", "53100"]) {
    const err = withCode("no space left on device", code);
    assert.is(outageError(err)!.status, 507);
    assert.is(outageError(err)!.message, KERNEL_ERRORS.storageFull);
    assert.is(outageError(err, { nothingCharged: true })!.message, KERNEL_ERRORS.storageFullNothingCharged);
    assert.equal(outageError(err)!.headers, {});
  }
  assert.not.match(KERNEL_ERRORS.storageFull, /refund/i);
  assert.not.match(KERNEL_ERRORS.storageFullNothingCharged, /refund/i);
});

t("anything else is no outage (the fixed 500)", () => {
  for (const err of [
    new Error("boom"),
    new TypeError("x is undefined"),
    withCode("duplicate key", "23505"),
    "a string",
    null,
    undefined,
  ])
    assert.is(outageError(err), null, String(err));
});

/** A port that refuses: a listener opened and closed. */
async function refusingPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

t("Redis out of reach: counters and publish fail as transient errors instead of waiting for reconnects", async () => {
  const url = `redis://127.0.0.1:${await refusingPort()}`;
  const counters = redisCounters({ url });
  const pubsub = redisPubSub({ url });
  try {
    // The first command may be queued while the first connection is tried; it fails when that attempt does.
    for (let i = 0; i < 3; i++) {
      const failures = await Promise.allSettled([
        counters.increment("k", 1000),
        counters.get("k"),
        counters.ping(),
        pubsub.publish("c", 1),
      ]);
      for (const f of failures) {
        assert.is(f.status, "rejected");
        assert.ok(isTransient((f as PromiseRejectedResult).reason), String((f as PromiseRejectedResult).reason));
      }
    }
  } finally {
    await counters.close();
    await pubsub.close();
  }
});

t.run();
