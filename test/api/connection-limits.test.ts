// The connection limits (transports/connection-limits.ts): the count by address and in all, the address key,
// the default cap from the open-file limit, the body-rate watch on a clock of its own, and all of it on a real
// node:http server in this process (caps, a header time-out, a slow body cut, the counts /metrics reads).
// The full server under attack is test/security/attacks-connections.test.ts.

import { EventEmitter } from "node:events";
import { createServer, type IncomingMessage, type Server } from "node:http";
import net from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { ConnectionSettings } from "../../core/config.ts";
import { addressKey } from "../../transports/address-key.ts";
import {
  BodyRateWatch,
  ConnectionLedger,
  connectionCountsOf,
  defaultConnectionsMax,
  guardConnections,
  openFileLimit,
} from "../../transports/connection-limits.ts";
import { ADDRESS_KEYS } from "./address-keys.ts";

const t = suite("connection limits");

t("the ledger: per address, then in all; refusals counted by reason; the map empties as connections close", () => {
  const ledger = new ConnectionLedger({ perAddress: 2, max: 3 });
  const answers = ["a", "a", "a", "b", "c"].map((address) => ledger.admit(address));
  assert.equal(answers, [null, null, "per_address", null, "max"]);
  assert.equal(ledger.refused, { per_address: 1, max: 1 });
  assert.is(ledger.open, 3);
  ledger.release("a");
  assert.is(ledger.admit("a"), null, "a closed connection frees its address's place");
  for (const k of ["a", "a", "b"]) ledger.release(k);
  assert.is(ledger.open, 0);
  assert.is(ledger.addresses, 0);
});

t("the ledger: 0 is off; an unknown address counts in all only", () => {
  const ledger = new ConnectionLedger({ perAddress: 0, max: 0 });
  for (let i = 0; i < 1000; i++) assert.is(ledger.admit("a"), null);
  assert.is(ledger.addresses, 0);
  const capped = new ConnectionLedger({ perAddress: 1, max: 2 });
  assert.equal(
    [1, 2, 3].map(() => capped.admit(undefined)),
    [null, null, "max"],
  );
});

t("address keys: IPv4 as is, IPv4-mapped unmapped, IPv6 by its /64", () => {
  for (const [address, key] of ADDRESS_KEYS) assert.is(addressKey(address), key, address);
  assert.is(addressKey(undefined), undefined);
});

t("the default cap in all: below the open-file limit, with room kept back, at most 10,000", () => {
  assert.is(defaultConnectionsMax(20_000), 10_000);
  assert.is(defaultConnectionsMax(4_096), 3_276);
  assert.is(defaultConnectionsMax(1_024), 768);
  assert.is(defaultConnectionsMax(Number.POSITIVE_INFINITY), 10_000);
  assert.is(
    openFileLimit(
      () =>
        "Limit  Soft Limit  Hard Limit  Units\nMax open files            1024                 524288               files\n",
    ),
    1_024,
  );
  assert.is(
    openFileLimit(() => "Max open files            unlimited            unlimited            files\n"),
    Number.POSITIVE_INFINITY,
  );
  assert.is(
    openFileLimit(() => "nothing here"),
    undefined,
  );
  assert.is(
    openFileLimit(() => {
      throw new Error("no /proc");
    }),
    undefined,
  );
});

/** A request and socket as the watch sees them. */
function fakeBody() {
  const socket = {
    bytesRead: 0,
    destroyed: false,
    paused: false,
    isPaused() {
      return this.paused;
    },
  };
  const request = Object.assign(new EventEmitter(), {
    complete: false,
    socket,
    readableLength: 0,
    readableHighWaterMark: 16_384,
  });
  return { request: request as unknown as IncomingMessage & { complete: boolean }, socket };
}

t("the body-rate watch: a body under the rate over a window is cut; one held back by the server is not", () => {
  let now = 0;
  const cut: unknown[] = [];
  const watch = new BodyRateWatch(
    10_000,
    1_000,
    (r) => cut.push(r),
    () => now,
  );
  const fast = fakeBody();
  const slow = fakeBody();
  const held = fakeBody();
  const done = fakeBody();
  for (const b of [fast, slow, held, done]) watch.watch(b.request);
  now = 5_000;
  watch.check();
  assert.is(cut.length, 0, "not before a whole window");
  now = 10_000;
  fast.socket.bytesRead = 20_000;
  slow.socket.bytesRead = 9_000;
  held.socket.paused = true;
  done.request.complete = true;
  watch.check();
  assert.equal(cut, [slow.request]);
  assert.is(watch.watching, 2, "the slow one and the complete one are no longer watched");
  // The next window starts where the last ended: the fast body must keep its rate.
  now = 20_000;
  fast.socket.bytesRead = 25_000;
  held.socket.paused = false;
  watch.check();
  assert.equal(cut, [slow.request, fast.request, held.request]);
  assert.is(watch.watching, 0);
  watch.stop();
});

const SETTINGS: ConnectionSettings = {
  headersTimeoutMs: 1_000,
  bodyTimeoutMs: 300,
  bodyMinBytesPerS: 1_000,
  keepAliveTimeoutMs: 5_000,
  perAddress: 3,
  max: 5,
  subscriptionsPerKey: 0,
  subscriptionsPerSocket: 0,
};

async function listen(server: Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return (server.address() as net.AddressInfo).port;
}

/** A raw client: resolves on close with what the server wrote. */
function client(port: number, localAddress: string, payload: string, sockets: net.Socket[]): Promise<string> {
  return new Promise((done) => {
    const socket = net.connect({ port, host: "127.0.0.1", localAddress });
    sockets.push(socket);
    let got = "";
    socket.on("connect", () => socket.write(payload));
    socket.on("data", (d) => (got += d));
    socket.on("error", () => {});
    socket.on("close", () => done(got));
  });
}

t("on a server: over a cap closed unanswered, slow headers 408, a slow body cut, the counts registered", async () => {
  const owner = {};
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.end("ok"));
  });
  const guarded = guardConnections(server, SETTINGS, { owner, listener: "public" });
  const port = await listen(server);
  const sockets: net.Socket[] = [];
  try {
    const headers = "GET / HTTP/1.1\r\nHost: x\r\n"; // never finished
    const body = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc"; // never sent
    // One address past its cap first (the fourth is closed at once), then the cap in all (5) reached.
    const first = Array.from({ length: 4 }, () => client(port, "127.0.0.2", headers, sockets));
    await Promise.race(first);
    const answers = await Promise.all([
      ...first,
      ...Array.from({ length: 3 }, () => client(port, "127.0.0.3", body, sockets)),
    ]);
    assert.equal(
      answers
        .slice(0, 4)
        .map((a) => a.split("\r\n")[0])
        .sort(),
      ["", "HTTP/1.1 408 Request Timeout", "HTTP/1.1 408 Request Timeout", "HTTP/1.1 408 Request Timeout"],
    );
    assert.equal(
      answers
        .slice(4)
        .map((a) => a.split("\r\n")[0])
        .sort(),
      ["", "", ""],
      "cut bodies and the one over the cap in all get no answer",
    );
    const [counts] = connectionCountsOf(owner);
    assert.equal(
      { refused: counts!.refused, timeouts: counts!.timeouts, open: counts!.open() },
      { refused: { per_address: 1, max: 1 }, timeouts: { headers: 3, body: 2 }, open: 0 },
    );
    // A well-behaved client still gets its answer.
    const ok = await client(port, "127.0.0.4", "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", sockets);
    assert.match(ok, /^HTTP\/1.1 200/);
    assert.is(guarded.ledger.addresses, 0, "every address's count back to nothing");
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  }
  assert.equal(connectionCountsOf(owner), [], "a closed server's counts are unregistered");
});

t("the probe port: no per-address cap, its own cap in all", async () => {
  const owner = {};
  const server = createServer((_req, res) => res.end("ok"));
  guardConnections(server, { ...SETTINGS, perAddress: 1, max: 1 }, { owner, listener: "health" });
  const port = await listen(server);
  const sockets: net.Socket[] = [];
  try {
    const answers = await Promise.all(
      Array.from({ length: 5 }, () =>
        client(port, "127.0.0.5", "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", sockets),
      ),
    );
    assert.ok(
      answers.every((a) => a.startsWith("HTTP/1.1 200")),
      "five from one address on the probe port",
    );
    assert.equal(connectionCountsOf(owner)[0]!.refused, { per_address: 0, max: 0 });
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  }
});

t.run();
