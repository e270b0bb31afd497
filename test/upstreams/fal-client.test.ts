// The fal protocol client (plugins/upstreams/fal/client.ts) against the fal stand-in (testkit/standins/fal.ts),
// which speaks fal's documented queue API: submit with `Authorization: Key`, the status/response/cancel URLs
// the submit answered used as given (under the app's owner and name, not the model id), statuses mapped,
// results and result errors, cancel, refusals (401, 503, 429 with Retry-After) as not accepted, and the key
// in no error message.
import { type AddressInfo, createServer as createNetServer } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createOutboundGuard } from "../../lib/outbound/index.ts";
import { parseRetryAfter } from "../../plugins/upstreams/call-failures.ts";
import { falClient, falOutputUrls } from "../../plugins/upstreams/fal/client.ts";
import { type ProtocolClient, type ProtocolHandle, UpstreamCallError } from "../../plugins/upstreams/protocol.ts";
import { type FalStandIn, type FalStandInOptions, startFalStandIn } from "../../testkit/standins/fal.ts";
import { rejection } from "../helpers/assert.ts";

const MODEL = "fal-ai/flux/dev";
const guard = createOutboundGuard({ allowPrivate: true });
const never = new AbortController().signal;
/** Every error the tests provoke, to check that none holds the key or a URL. */
const provoked: Error[] = [];

function clientFor(standIn: FalStandIn, key = standIn.key): ProtocolClient {
  return falClient({ baseUrl: standIn.url, key, outbound: guard, jwksUrl: standIn.jwksUrl });
}

async function withStandIn(options: FalStandInOptions, body: (s: FalStandIn, c: ProtocolClient) => Promise<void>) {
  const standIn = await startFalStandIn(options);
  try {
    await body(standIn, clientFor(standIn));
  } finally {
    await standIn.close();
  }
}

const submit = (client: ProtocolClient, model = MODEL, input: Record<string, unknown> = { prompt: "a red fox" }) =>
  client.submit({ model, input, idempotencyKey: "job-1:0", signal: never });

async function pollUntilDone(client: ProtocolClient, handle: ProtocolHandle) {
  const states: string[] = [];
  for (let i = 0; i < 10; i++) {
    const look = await client.poll(handle, never);
    states.push(look.state === "pending" ? (look.message ?? "pending") : look.state);
    if (look.state !== "pending") return { look, states };
  }
  throw new Error(`never ended: ${states.join(", ")}`);
}

async function fetched(url: string): Promise<Uint8Array> {
  return (await guard.fetch(url, { allowHttp: true })).body;
}

const t = suite("fal client");

t.after(async () => {
  await guard.close();
});

t("a submit posts the input to {base}/{model} with the key; the handle keeps the URLs fal answered", async () => {
  await withStandIn({ pace: "manual" }, async (standIn, client) => {
    const handle = await submit(client);
    const call = standIn.requests[0]!;
    assert.is(call.method, "POST");
    assert.is(call.path, `/${MODEL}`);
    assert.is(call.headers.authorization, `Key ${standIn.key}`);
    assert.equal(call.body, { prompt: "a red fox" });
    assert.ok(standIn.submitted.has(handle.id));
    // fal serves the request under the app's owner and name, not under the model id.
    const under = `${standIn.url}/fal-ai/flux/requests/${handle.id}`;
    assert.equal(handle.data, {
      request_id: handle.id,
      status_url: `${under}/status`,
      response_url: under,
      cancel_url: `${under}/cancel`,
    });
    assert.is(JSON.stringify(handle).includes(standIn.key), false);
  });
});

t("a model id that is not owner/app[/path] is refused before any call", async () => {
  await withStandIn({}, async (standIn, client) => {
    for (const model of [
      "flux",
      "fal-ai/flux?x=1",
      "../admin/x",
      "fal-ai/../x",
      "fal-ai//flux",
      "fal-ai/flux#a",
      " fal-ai/flux",
    ]) {
      const err = await rejection(submit(client, model));
      provoked.push(err);
      assert.is(err.message, "fal model id is not owner/app[/path]", model);
      assert.is(err.accepted, false);
    }
    assert.is(standIn.requests.length, 0);
  });
});

t("a webhook URL rides as fal_webhook on the submit", async () => {
  await withStandIn({ pace: "manual" }, async (standIn, client) => {
    const webhookUrl = "http://127.0.0.1:9/hooks/fal?job=1";
    const handle = await client.submit({
      model: MODEL,
      input: { prompt: "x" },
      idempotencyKey: "k",
      webhookUrl,
      signal: never,
    });
    const query = new URL(standIn.requests[0]!.path, "http://x").searchParams;
    assert.is(query.get("fal_webhook"), webhookUrl);
    assert.is(standIn.submitted.get(handle.id)!.webhookUrl, webhookUrl);
  });
});

t(
  "statuses map: IN_QUEUE and IN_PROGRESS pending, COMPLETED done with the result; the looks use status_url",
  async () => {
    await withStandIn({ pace: "manual" }, async (standIn, client) => {
      const handle = await submit(client);
      assert.equal(await client.poll(handle, never), { state: "pending", message: "in queue (position 0)" });
      await standIn.step(handle.id);
      assert.equal(await client.poll(handle, never), { state: "pending", message: "in progress" });
      await standIn.finish(handle.id);
      const look = await client.poll(handle, never);
      assert.is(look.state, "done");
      const urls = client.outputUrls(look.state === "done" ? look.output : undefined);
      assert.is(urls.length, 1);
      assert.ok(urls[0]!.startsWith(`${standIn.url}/files/`));
      const png = await fetched(urls[0]!);
      assert.equal([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
      const paths = standIn.requests.map((r) => `${r.method} ${r.path}`);
      assert.equal(paths, [
        `POST /${MODEL}`,
        `GET /fal-ai/flux/requests/${handle.id}/status`,
        `GET /fal-ai/flux/requests/${handle.id}/status`,
        `GET /fal-ai/flux/requests/${handle.id}/status`,
        `GET /fal-ai/flux/requests/${handle.id}`,
      ]);
      assert.ok(standIn.requests.every((r) => r.headers.authorization === `Key ${standIn.key}`));
    });
  },
);

t("the picture is a real PNG of the size the input asks (image_size as {width, height} or fal's name)", async () => {
  await withStandIn({}, async (_s, client) => {
    const cases: Array<[Record<string, unknown>, number, number]> = [
      [{ image_size: { width: 320, height: 200 } }, 320, 200],
      [{ image_size: { width: "96", height: "64" } }, 96, 64],
      [{ image_size: "landscape_4_3" }, 1024, 768],
      [{}, 256, 256],
    ];
    for (const [input, width, height] of cases) {
      const { look } = await pollUntilDone(client, await submit(client, MODEL, { prompt: "p", ...input }));
      const output =
        look.state === "done" ? (look.output as { images: Array<{ width: number; height: number }> }) : null;
      assert.equal([output?.images[0]?.width, output?.images[0]?.height], [width, height]);
      const png = await fetched(client.outputUrls(output)[0]!);
      const view = new DataView(png.buffer, png.byteOffset);
      assert.equal([view.getUint32(16), view.getUint32(20)], [width, height], JSON.stringify(input));
    }
  });
});

t("one status per look (on-poll): queued, running, then the video result", async () => {
  await withStandIn({}, async (_standIn, client) => {
    const handle = await submit(client, "fal-ai/kling-video/v2/text-to-video", { prompt: "waves", duration: "2" });
    const { look, states } = await pollUntilDone(client, handle);
    assert.equal(states, ["in queue (position 0)", "in progress", "done"]);
    const urls = client.outputUrls(look.state === "done" ? look.output : undefined);
    const mp4 = await fetched(urls[0]!);
    assert.is(new TextDecoder().decode(mp4.subarray(4, 8)), "ftyp");
  });
});

t("audio apps answer audio.url (an MP3); audio_file and image shapes are read too", async () => {
  await withStandIn({ output: (model) => (model.includes("music") ? "audio_file" : "image") }, async (_s, client) => {
    const song = await pollUntilDone(client, await submit(client, "fal-ai/stable-audio-music", { duration: 2 }));
    const [songUrl] = client.outputUrls(song.look.state === "done" ? song.look.output : undefined);
    const mp3 = await fetched(songUrl!);
    const id3 = new TextDecoder().decode(mp3.subarray(0, 3)) === "ID3";
    assert.ok(id3 || (mp3[0] === 0xff && (mp3[1]! & 0xe0) === 0xe0), "an MP3");
    const picture = await pollUntilDone(client, await submit(client));
    assert.is(client.outputUrls(picture.look.state === "done" ? picture.look.output : undefined).length, 1);
  });
});

t("outputUrls reads every documented shape and nothing else", () => {
  assert.equal(falOutputUrls({ images: [{ url: "https://a/1.png" }, { url: "https://a/2.png" }, { nope: 1 }] }), [
    "https://a/1.png",
    "https://a/2.png",
  ]);
  assert.equal(falOutputUrls({ image: { url: "https://a/i.png" } }), ["https://a/i.png"]);
  assert.equal(falOutputUrls({ video: { url: "https://a/v.mp4" } }), ["https://a/v.mp4"]);
  assert.equal(falOutputUrls({ audio: { url: "https://a/a.mp3" } }), ["https://a/a.mp3"]);
  assert.equal(falOutputUrls({ audio_file: { url: "https://a/f.wav" } }), ["https://a/f.wav"]);
  assert.equal(falOutputUrls({ images: "https://a/x.png", video: "https://a/v.mp4", url: "https://a" }), []);
  assert.equal(falOutputUrls(null), []);
  assert.equal(falOutputUrls(["https://a/1.png"]), []);
});

t("the stand-in's lying outputs are served as they lie (HTML and zero bytes named .png)", async () => {
  for (const output of ["html-as-png", "empty-png"] as const) {
    await withStandIn({ output }, async (_s, client) => {
      const { look } = await pollUntilDone(client, await submit(client));
      const [url] = client.outputUrls(look.state === "done" ? look.output : undefined);
      assert.ok(url!.endsWith(".png"));
      const res = await guard.fetch(url!, { allowHttp: true });
      assert.is(res.headers["content-type"], "image/png");
      if (output === "empty-png") assert.is(res.body.length, 0);
      else assert.ok(new TextDecoder().decode(res.body).startsWith("<!doctype html>"));
    });
  }
});

t("a request the model refuses (422 detail) fails with fal's words, made safe", async () => {
  await withStandIn({ fail: "field required" }, async (_s, client) => {
    const { look } = await pollUntilDone(client, await submit(client));
    assert.is(look.state, "failed");
    if (look.state !== "failed") return;
    provoked.push(look.error);
    assert.instance(look.error, UpstreamCallError);
    assert.is(look.error.message, "fal request failed (422: body.prompt: field required)");
    assert.is((look.error as UpstreamCallError).upstreamStatus, 422);
  });
});

t("a request error (error_type) fails; its detail loses the key and any URL", async () => {
  const key = "fal-secret-key-0123456789abcdef";
  const standIn = await startFalStandIn({
    key,
    fail: {
      status: 504,
      detail: `timed out for Key ${key} at https://runner.internal/x?y=1`,
      errorType: "request_timeout",
    },
  });
  try {
    const client = clientFor(standIn);
    const { look } = await pollUntilDone(client, await submit(client));
    assert.is(look.state, "failed");
    if (look.state !== "failed") return;
    provoked.push(look.error);
    assert.ok(look.error.message.startsWith("fal request failed (request_timeout: timed out"), look.error.message);
    assert.not.ok(look.error.message.includes(key));
    assert.not.ok(look.error.message.includes("runner.internal"));
  } finally {
    await standIn.close();
  }
});

t("a wrong key: 401, not accepted, no key in the message", async () => {
  await withStandIn({}, async (standIn) => {
    const wrong = "fal-wrong-key-abcdef0123456789";
    const err = await rejection(submit(clientFor(standIn, wrong)));
    provoked.push(err);
    assert.instance(err, UpstreamCallError);
    assert.is(err.upstreamStatus, 401);
    assert.is(err.accepted, false);
    assert.is(err.message, "fal submit answered 401");
    assert.is(standIn.submitted.size, 0);
  });
});

t("503 and 429 with Retry-After refuse the submit: not accepted, Retry-After in ms", async () => {
  await withStandIn({}, async (standIn, client) => {
    standIn.refuseSubmits(503);
    const unavailable = await rejection(submit(client));
    provoked.push(unavailable);
    assert.is(unavailable.upstreamStatus, 503);
    assert.is(unavailable.accepted, false);
    assert.is(unavailable.retryAfterMs, undefined);
    assert.is(unavailable.message, "fal submit answered 503: Service temporarily unavailable");

    standIn.refuseSubmits(429, 1, "7");
    const limited = await rejection(submit(client));
    provoked.push(limited);
    assert.is(limited.upstreamStatus, 429);
    assert.is(limited.accepted, false);
    assert.is(limited.retryAfterMs, 7000);

    standIn.refuseSubmits(429, 1, new Date(Date.now() + 120_000).toUTCString());
    const dated = await rejection(submit(client));
    provoked.push(dated);
    assert.ok(dated.retryAfterMs > 60_000 && dated.retryAfterMs <= 120_000, String(dated.retryAfterMs));

    // Refusals used up: the next submit is taken.
    assert.ok((await submit(client)).id);
  });
});

t("Retry-After: seconds or an HTTP date; anything else is none", () => {
  const now = Date.UTC(2026, 10, 1, 12, 0, 0);
  assert.is(parseRetryAfter("30", now), 30_000);
  assert.is(parseRetryAfter("Sun, 01 Nov 2026 12:00:45 GMT", now), 45_000);
  assert.is(parseRetryAfter("Sun, 01 Nov 2026 11:00:00 GMT", now), 0);
  assert.is(parseRetryAfter("soon", now), undefined);
  assert.is(parseRetryAfter("-5", now), undefined);
  assert.is(parseRetryAfter(undefined, now), undefined);
});

t("no answer at all (nothing listening): not accepted, the guard's kind, no URL", async () => {
  const standIn = await startFalStandIn();
  const client = clientFor(standIn);
  await standIn.close();
  const err = await rejection(submit(client));
  provoked.push(err);
  assert.instance(err, UpstreamCallError);
  assert.is(err.accepted, false);
  assert.is(err.upstreamStatus, undefined);
  assert.is(err.message, "fal submit failed (network, ECONNREFUSED)");
});

t("a connection lost after the submit went out may have queued the work: accepted, never sent elsewhere", async () => {
  const server = createNetServer((socket) => socket.once("data", () => socket.destroy()));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    const port = (server.address() as AddressInfo).port;
    const client = falClient({ baseUrl: `http://127.0.0.1:${port}`, key: "fal-secret-reset", outbound: guard });
    const err = await rejection(submit(client));
    provoked.push(err);
    assert.instance(err, UpstreamCallError);
    assert.is(err.accepted, true);
    assert.match(err.message, /^fal submit failed \(network/);
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
});

t(
  "a look refused with 503 or 429 (no fal verdict) throws for a retry, with Retry-After; the request goes on",
  async () => {
    await withStandIn({ pace: "manual" }, async (standIn, client) => {
      const handle = await submit(client);
      standIn.refuseLooks(503);
      const unavailable = await rejection(client.poll(handle, never));
      provoked.push(unavailable);
      assert.instance(unavailable, UpstreamCallError);
      assert.is(unavailable.message, "fal status answered 503");
      assert.is(unavailable.upstreamStatus, 503);
      assert.is(unavailable.accepted, true);

      standIn.refuseLooks(429, { retryAfter: "12" });
      const limited = await rejection(client.poll(handle, never));
      provoked.push(limited);
      assert.is(limited.retryAfterMs, 12_000);

      // Done, but its result answers a bare 502 once: a failed look, not a failed request.
      await standIn.finish(handle.id);
      standIn.refuseLooks(502, { at: "result" });
      const bare = await rejection(client.poll(handle, never));
      provoked.push(bare);
      assert.is(bare.message, "fal result answered 502");
      const look = await client.poll(handle, never);
      assert.is(look.state, "done");
    });
  },
);

t("cancel PUTs cancel_url; a completed request's 400 ALREADY_COMPLETED is no error", async () => {
  await withStandIn({ pace: "manual" }, async (standIn, client) => {
    const handle = await submit(client);
    await client.cancel(handle);
    const put = standIn.requests.at(-1)!;
    assert.is(`${put.method} ${put.path}`, `PUT /fal-ai/flux/requests/${handle.id}/cancel`);
    assert.is(standIn.submitted.get(handle.id)!.cancelled, true);
    const look = await client.poll(handle, never);
    assert.is(look.state, "failed");

    const done = await submit(client);
    await standIn.finish(done.id);
    await client.cancel(done);
    assert.is(standIn.submitted.get(done.id)!.cancelled, false);
  });
});

t("a handle naming another origin is refused: the key goes nowhere else", async () => {
  const other = await startFalStandIn({ key: "other" });
  try {
    await withStandIn({ pace: "manual" }, async (_standIn, client) => {
      const handle = await submit(client);
      const moved = {
        id: handle.id,
        data: { ...handle.data, status_url: `${other.url}/fal-ai/flux/requests/x/status` },
      };
      const err = await rejection(client.poll(moved, never));
      provoked.push(err);
      assert.is(err.message, "fal handle holds no usable URLs");
      const cancelErr = await rejection(
        client.cancel({ id: handle.id, data: { ...handle.data, cancel_url: `${other.url}/x/y/requests/z/cancel` } }),
      );
      provoked.push(cancelErr);
      assert.is(other.requests.length, 0);
    });
  } finally {
    await other.close();
  }
});

t("a look at a request fal does not know fails it; a look that gets no answer throws for a retry", async () => {
  await withStandIn({ pace: "manual" }, async (standIn, client) => {
    const handle = await submit(client);
    const unknown = {
      id: "nope",
      data: { ...handle.data, status_url: `${standIn.url}/fal-ai/flux/requests/nope/status` },
    };
    const look = await client.poll(unknown, never);
    assert.is(look.state, "failed");
    if (look.state === "failed") provoked.push(look.error);

    await standIn.close();
    const err = await rejection(client.poll(handle, never));
    provoked.push(err);
    assert.instance(err, UpstreamCallError);
    assert.match(err.message, /^fal status failed \(network, [A-Z_]+\)$/);
    assert.is(err.accepted, true);
  });
});

t("no error provoked above holds a key or a URL", () => {
  assert.ok(provoked.length >= 10, `only ${provoked.length} errors provoked`);
  for (const err of provoked) {
    assert.not.match(err.message, /fal-(standin|secret|wrong)|https?:\/\//, err.message);
    assert.is(err.cause, undefined);
  }
});

t.run();
