// The Replicate protocol client (plugins/upstreams/replicate/client.ts, issue 39 item 3) against the stand-in
// that speaks Replicate's documented predictions API (testkit/standins/replicate.ts): both create forms, the
// statuses to their ends, outputs as one URL or a list, failed / canceled / aborted predictions, cancel, the
// handle's URLs used as given, and the answers that decide failover (401, 503 and 429 with Retry-After, no
// connection: not accepted), never with the token in a message.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createOutboundGuard } from "../../lib/outbound/index.ts";
import { type ProtocolClient, type ProtocolHandle, UpstreamCallError } from "../../plugins/upstreams/protocol.ts";
import {
  createTarget,
  progressFromLogs,
  replicateClient,
  replicateOutputUrls,
  retryAfterMs,
} from "../../plugins/upstreams/replicate/client.ts";
import { type ReplicateStandIn, type ReplicateStandInOptions, startReplicateStandIn } from "../../testkit/index.ts";

const outbound = createOutboundGuard({ allowPrivate: true });
const t = suite("replicate client");
const open: ReplicateStandIn[] = [];

t.after(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
  await outbound.close();
});

async function standIn(options: ReplicateStandInOptions = {}) {
  const s = await startReplicateStandIn(options);
  open.push(s);
  const client = replicateClient({ baseUrl: s.url, key: s.token, outbound });
  return { s, client };
}

const signal = () => new AbortController().signal;

function submit(client: ProtocolClient, model: string, extra: { webhookUrl?: string } = {}) {
  return client.submit({
    model,
    input: { prompt: "a lighthouse" },
    idempotencyKey: "job-1:0",
    signal: signal(),
    ...extra,
  });
}

/** Polls until the prediction ends (the stand-in moves one status per look), keeping each answer. */
async function pollAll(client: ProtocolClient, handle: ProtocolHandle) {
  const seen = [];
  for (let i = 0; i < 10; i++) {
    const polled = await client.poll(handle, signal());
    seen.push(polled);
    if (polled.state !== "pending") return seen;
  }
  throw new Error("the prediction never ended");
}

async function rejection(promise: Promise<unknown>): Promise<UpstreamCallError> {
  try {
    await promise;
  } catch (err) {
    assert.instance(err, UpstreamCallError);
    return err as UpstreamCallError;
  }
  throw new Error("expected a rejection");
}

t("owner/name creates through the model's predictions endpoint with a Bearer token and no Prefer: wait", async () => {
  const { s, client } = await standIn();
  const handle = await submit(client, "black-forest-labs/flux-schnell");
  const created = s.requests[0]!;
  assert.is(created.method, "POST");
  assert.is(created.path, "/v1/models/black-forest-labs/flux-schnell/predictions");
  assert.is(created.headers.authorization, `Bearer ${s.token}`);
  assert.is(created.headers.prefer, undefined);
  assert.equal(created.body, { input: { prompt: "a lighthouse" } });
  const prediction = s.predictions.get(handle.id)!;
  assert.ok(prediction, "the handle names the prediction created");
  assert.equal(handle.data, { get: prediction.urls.get, cancel: prediction.urls.cancel });
});

t("owner/name:version and a bare version id create through /predictions with `version`", async () => {
  const { s, client } = await standIn();
  const version = "5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa";
  const named = await submit(client, `stability-ai/sdxl:${version}`);
  await submit(client, version);
  assert.is(s.predictions.get(named.id)!.version, version);
  for (const r of s.requests) {
    assert.is(r.path, "/v1/predictions");
    assert.equal(r.body, { version, input: { prompt: "a lighthouse" } });
  }
  await rejection(submit(client, "not a model id")).then((err) => assert.is(err.accepted, false));
  assert.is(s.requests.length, 2, "a bad model id is refused before any call");
});

t("a webhook URL is sent with webhook_events_filter [completed]", async () => {
  const { s, client } = await standIn({ pace: "manual" });
  await submit(client, "owner/model", { webhookUrl: "https://mediagate.example/callbacks/replicate/abc" });
  assert.equal(s.requests[0]!.body, {
    input: { prompt: "a lighthouse" },
    webhook: "https://mediagate.example/callbacks/replicate/abc",
    webhook_events_filter: ["completed"],
  });
});

t(
  "starting and processing are pending (processing with the logs' progress); succeeded hands the output URL",
  async () => {
    const { client } = await standIn({ output: "png" });
    const handle = await submit(client, "owner/model");
    const seen = await pollAll(client, handle);
    assert.equal(seen[0], { state: "pending" });
    assert.equal(seen[1], { state: "pending", progress: 0.5 });
    const done = seen[2]!;
    assert.is(done.state, "done");
    const urls = client.outputUrls(done.state === "done" ? done.output : null);
    assert.is(urls.length, 1);
    const file = await outbound.fetch(urls[0]!, { allowHttp: true });
    assert.equal([...file.body.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], "a real PNG");
  },
);

t("an output list gives every URL; the stand-in's MP4 and MP3 are real files", async () => {
  const { client } = await standIn({
    output: (model) => (model === "owner/video" ? "mp4" : model === "owner/song" ? "mp3" : "png-list"),
  });
  const list = await pollAll(client, await submit(client, "owner/pictures"));
  const last = list.at(-1)!;
  assert.is(last.state, "done");
  assert.is(client.outputUrls(last.state === "done" ? last.output : null).length, 2);

  const video = (await pollAll(client, await submit(client, "owner/video"))).at(-1)!;
  const videoUrl = client.outputUrls(video.state === "done" ? video.output : null)[0]!;
  const mp4 = (await outbound.fetch(videoUrl, { allowHttp: true })).body;
  assert.is(Buffer.from(mp4.subarray(4, 8)).toString("latin1"), "ftyp");

  const song = (await pollAll(client, await submit(client, "owner/song"))).at(-1)!;
  const songUrl = client.outputUrls(song.state === "done" ? song.output : null)[0]!;
  const mp3 = (await outbound.fetch(songUrl, { allowHttp: true })).body;
  assert.ok(
    Buffer.from(mp3.subarray(0, 3)).toString("latin1") === "ID3" || (mp3[0] === 0xff && (mp3[1]! & 0xe0) === 0xe0),
  );
});

t("with a latency the stand-in ends predictions by itself and calls the webhook", async () => {
  const { s, client } = await standIn({ pace: { latencyMs: 20 } });
  const received = createServer((_, res) => res.writeHead(204).end());
  await new Promise<void>((r) => received.listen(0, "127.0.0.1", r));
  try {
    const hook = `http://127.0.0.1:${(received.address() as AddressInfo).port}/hook`;
    const handle = await submit(client, "owner/model", { webhookUrl: hook });
    await s.webhooksDelivered(1);
    assert.is(s.webhooks[0]!.status, 204);
    const polled = await client.poll(handle, signal());
    assert.is(polled.state, "done");
  } finally {
    received.closeAllConnections();
    await new Promise<void>((r) => received.close(() => r()));
  }
});

t("two looks at once end a prediction once: one webhook", async () => {
  const { s, client } = await standIn();
  const received = createServer((_, res) => res.writeHead(204).end());
  await new Promise<void>((r) => received.listen(0, "127.0.0.1", r));
  try {
    const hook = `http://127.0.0.1:${(received.address() as AddressInfo).port}/hook`;
    const handle = await submit(client, "owner/model", { webhookUrl: hook });
    await client.poll(handle, signal()); // starting -> processing
    await Promise.all([client.poll(handle, signal()), client.poll(handle, signal())]);
    await s.close(); // waits for every delivery under way
    assert.is(s.predictions.get(handle.id)!.status, "succeeded");
    assert.is(s.webhooks.length, 1);
  } finally {
    received.closeAllConnections();
    await new Promise<void>((r) => received.close(() => r()));
  }
});

t("outputUrls takes a URL or a list of URLs and nothing else", () => {
  assert.equal(replicateOutputUrls("https://replicate.delivery/a/out.png"), ["https://replicate.delivery/a/out.png"]);
  assert.equal(replicateOutputUrls(["https://r.d/1.png", 3, null, "https://r.d/2.png"]), [
    "https://r.d/1.png",
    "https://r.d/2.png",
  ]);
  assert.equal(replicateOutputUrls({ video: "https://r.d/v.mp4" }), []);
  assert.equal(replicateOutputUrls("no url"), []);
  assert.equal(replicateOutputUrls(null), []);
});

t("a failed prediction fails with its error, cleaned; the token never in it", async () => {
  const { s, client } = await standIn({ fail: "CUDA out of memory\u0000" });
  const seen = await pollAll(client, await submit(client, "owner/model"));
  const last = seen.at(-1)!;
  assert.is(last.state, "failed");
  if (last.state !== "failed") return;
  assert.instance(last.error, UpstreamCallError);
  assert.is(last.error.message, "the Replicate prediction failed: CUDA out of memory");
  assert.not.ok(last.error.message.includes(s.token));
});

t("cancel posts to the prediction's cancel URL; a canceled or aborted prediction fails", async () => {
  const { s, client } = await standIn({ pace: "manual" });
  const handle = await submit(client, "owner/model");
  await client.cancel(handle);
  const cancel = s.requests.at(-1)!;
  assert.is(cancel.method, "POST");
  assert.is(cancel.path, `/v1/predictions/${handle.id}/cancel`);
  assert.is(s.predictions.get(handle.id)!.status, "canceled");
  const polled = await client.poll(handle, signal());
  assert.is(polled.state, "failed");
  assert.is(polled.state === "failed" && polled.error.message, "the Replicate prediction was canceled");
  await client.cancel(handle); // already ended: nothing to stop, no error

  const other = await submit(client, "owner/model");
  (s.predictions.get(other.id)! as { status: string }).status = "aborted";
  const aborted = await client.poll(other, signal());
  assert.is(
    aborted.state === "failed" && aborted.error.message,
    "the Replicate prediction was aborted: its deadline passed before it started",
  );
});

t("the handle's URLs are used as given; URLs on another origin are not (the token stays home)", async () => {
  const { s, client } = await standIn({ pace: "manual" });
  const handle = await submit(client, "owner/model");
  const given = { id: handle.id, data: { get: `${handle.data.get}?look=1`, cancel: `${handle.data.cancel}?stop=1` } };
  assert.is((await client.poll(given, signal())).state, "pending");
  assert.is(s.requests.at(-1)!.path, `/v1/predictions/${handle.id}?look=1`);
  await client.cancel(given);
  assert.is(s.requests.at(-1)!.path, `/v1/predictions/${handle.id}/cancel?stop=1`);

  const elsewhere = { id: handle.id, data: { get: `http://127.0.0.2:9/v1/predictions/${handle.id}` } };
  await client.poll(elsewhere, signal());
  assert.is(s.requests.at(-1)!.path, `/v1/predictions/${handle.id}`, "the documented path on the base URL");
});

t("a prediction no longer found fails the look without a retry loop", async () => {
  const { client } = await standIn();
  const polled = await client.poll({ id: "gone0000000000000000000000", data: {} }, signal());
  assert.is(polled.state, "failed");
  assert.is(polled.state === "failed" && polled.error.message, "the Replicate prediction is no longer found");
});

t("a wrong token is 401, not accepted, with Replicate's detail and without the token", async () => {
  const { s } = await standIn();
  const key = "r8_wrongwrongwrongwrongwrongwrongwrongwro";
  const client = replicateClient({ baseUrl: s.url, key, outbound });
  const err = await rejection(submit(client, "owner/model"));
  assert.is(err.upstreamStatus, 401);
  assert.is(err.accepted, false);
  assert.is(
    err.message,
    "Replicate answered 401 to create the prediction: You did not pass a valid authentication token",
  );
  assert.not.ok(err.message.includes(key));
  assert.not.ok(err.message.includes(s.url));
  const poll = await rejection(client.poll({ id: "x", data: {} }, signal()));
  assert.is(poll.upstreamStatus, 401);
  assert.not.ok(poll.message.includes(key));
});

t("503 and 429 at submit are not accepted and carry Retry-After; the next create goes through", async () => {
  const { s, client } = await standIn();
  s.refuseCreates(503, 1, 7);
  const unavailable = await rejection(submit(client, "owner/model"));
  assert.is(unavailable.upstreamStatus, 503);
  assert.is(unavailable.accepted, false);
  assert.is(unavailable.retryAfterMs, 7000);

  s.refuseCreates(429, 1, 5);
  const throttled = await rejection(submit(client, "owner/model"));
  assert.is(throttled.upstreamStatus, 429);
  assert.is(throttled.accepted, false);
  assert.is(throttled.retryAfterMs, 5000);
  assert.ok(throttled.message.startsWith("Replicate answered 429 to create the prediction: Request was throttled."));

  const handle = await submit(client, "owner/model");
  assert.ok(s.predictions.has(handle.id));
  assert.is(s.predictions.size, 1, "refused creates made no prediction");
});

t("no connection at submit is not accepted; the message names no URL", async () => {
  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const client = replicateClient({ baseUrl: `http://127.0.0.1:${port}/v1`, key: "r8_secret_token_value", outbound });
  const err = await rejection(submit(client, "owner/model"));
  assert.is(err.accepted, false);
  assert.is(err.upstreamStatus, undefined);
  assert.not.ok(err.message.includes(String(port)));
  assert.not.ok(err.message.includes("r8_secret_token_value"));
});

t("a connection lost after the create was sent counts as accepted (the prediction may exist)", async () => {
  const hangUp = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.socket?.destroy());
  });
  await new Promise<void>((r) => hangUp.listen(0, "127.0.0.1", r));
  try {
    const base = `http://127.0.0.1:${(hangUp.address() as AddressInfo).port}/v1`;
    const client = replicateClient({ baseUrl: base, key: "r8_secret_token_value", outbound });
    const err = await rejection(submit(client, "owner/model"));
    assert.is(err.accepted, true);
    assert.is(err.upstreamStatus, undefined);
  } finally {
    hangUp.closeAllConnections();
    await new Promise<void>((r) => hangUp.close(() => r()));
  }
});

t("Retry-After as seconds, as a date, or the body's retry_after", () => {
  const now = Date.UTC(2026, 0, 1);
  assert.is(retryAfterMs({ "retry-after": "3" }, null, now), 3000);
  assert.is(retryAfterMs({ "retry-after": new Date(now + 10_000).toUTCString() }, null, now), 10_000);
  assert.is(retryAfterMs({}, { retry_after: 2.5 }, now), 2500);
  assert.is(retryAfterMs({}, { detail: "x" }, now), undefined);
});

t("progress is the last tqdm bar of the logs", () => {
  assert.is(
    progressFromLogs("Using seed: 1\n  0%|          | 0/50 [00:00<?, ?it/s]\r 12%|█▏        | 6/50 [00:00]"),
    6 / 50,
  );
  assert.is(progressFromLogs("no bar here"), undefined);
  assert.is(progressFromLogs(null), undefined);
});

t("model ids map to the documented endpoints", () => {
  assert.equal(createTarget("https://api.replicate.com/v1", "owner/name"), {
    url: "https://api.replicate.com/v1/models/owner/name/predictions",
  });
  assert.equal(createTarget("https://api.replicate.com/v1", "owner/name:abc123"), {
    url: "https://api.replicate.com/v1/predictions",
    version: "abc123",
  });
});

t.run();
