// The kernel's two upload body kinds (core/plugin.ts): `rawBody` (bytes with their own cap, counted while
// they stream, 415 for another media type, and GraphQL's 415) and multipart plain text `fields` (the form's
// text parts become the input object `input` validates), through the HTTP app of a test kernel.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { definePlugin, operation } from "../../core/plugin.ts";
import { defineInput, field } from "../../lib/input.ts";
import { createTestKernel, graphql, type TestKernel } from "../../testkit/index.ts";
import { createHttpApp } from "../../transports/http.ts";
import { buildOpenApi } from "../../transports/rest/openapi.ts";
import { errorBody } from "../helpers/error-body.ts";

const rawPart = operation({
  method: "POST",
  path: "/rawtest/part/<index>",
  rateLimit: "GET /me",
  rawBody: {
    contentTypes: ["application/octet-stream"],
    maxBytes: 1000,
    tooLarge: (p) => `part ${p.index} is too large`,
    tooLargeStatus: 400,
    unsupportedType: "send application/octet-stream",
  },
  async handle(ctx) {
    return { size: ctx.body!.byteLength, first: ctx.body![0] ?? null, index: ctx.params.index };
  },
});

const rawBig = operation({
  method: "POST",
  path: "/rawtest/big",
  rateLimit: "GET /me",
  rawBody: {
    contentTypes: ["application/octet-stream", "video/mp4"],
    maxBytes: 3_000_000,
    tooLarge: "too big",
    unsupportedType: "bytes only",
  },
  async handle(ctx) {
    return { size: ctx.body!.byteLength };
  },
});

const FormInput = defineInput({
  fields: { style: field.string(), partner_job_id: field.partnerJobId(), count: field.integer() },
  check(raw, fail) {
    let style: unknown = null;
    if (raw.style !== undefined) {
      if (typeof raw.style !== "string") fail("style must be JSON text");
      try {
        style = JSON.parse(raw.style as string);
      } catch {
        fail("style must be JSON text");
      }
    }
    return { style, partner_job_id: raw.partner_job_id, count: raw.count ?? null };
  },
});

const form = operation({
  method: "POST",
  path: "/rawtest/form",
  rateLimit: "GET /me",
  input: FormInput,
  multipart: {
    fields: ["style", "partner_job_id"],
    files: ["video"],
    unsupportedType: "form only",
    maxBytes: 100_000,
    tooLarge: "form too big",
    malformed: "bad form",
  },
  async handle(ctx) {
    return { input: ctx.input, file: ctx.files.video?.bytes.byteLength ?? null, body: ctx.body };
  },
});

const plugin = definePlugin({ name: "rawtest", operations: [rawPart, rawBig, form] });

for (const backend of [{ name: "pglite" }]) {
  const t = suite(`raw bodies and multipart text fields (${backend.name})`);
  let tk: TestKernel;
  let key: string;
  let app: ReturnType<typeof createHttpApp>;

  t.before(async () => {
    tk = await createTestKernel({ plugins: [plugin] });
    app = createHttpApp(tk.kernel, { adminToken: tk.adminToken });
    key = (await tk.partner()).key;
  });
  t.after(async () => tk.close());

  const send = async (
    path: string,
    body: BodyInit | null,
    headers: Record<string, string> = {},
    extra: RequestInit = {},
  ) => {
    const res = await app.fetch(
      new Request(`http://mediagate.test/api/v1/partner${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "user-agent": "tests/1.0", ...headers },
        body,
        ...extra,
      }),
    );
    return { status: res.status, headers: res.headers, body: (await res.json()) as any };
  };
  const octets = { "content-type": "application/octet-stream" };

  t("a raw body reaches the handler as ctx.body; the input object is empty", async () => {
    const res = await send("/rawtest/part/3", new Uint8Array(1000).fill(7), octets);
    assert.is(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body, { request_id: res.body.request_id, size: 1000, first: 7, index: "3" });
    const empty = await send("/rawtest/part/0", new Uint8Array(0), octets);
    assert.is(empty.body.size, 0);
  });

  t("another media type is the operation's 415, before the body is read", async () => {
    for (const type of ["application/json", "text/plain", "multipart/form-data; boundary=x"]) {
      const res = await send("/rawtest/part/1", new Uint8Array(10), { "content-type": type });
      assert.is(res.status, 415);
      assert.is(res.body.error, "send application/octet-stream");
    }
    const none = await send("/rawtest/part/1", null);
    assert.is(none.status, 415);
    // Parameters on the media type are fine.
    assert.is(
      (await send("/rawtest/big", new Uint8Array(5), { "content-type": "Video/MP4; codecs=avc1" })).status,
      200,
    );
  });

  t(
    "over the cap: the declared status and text (a function of the path), by Content-Length or while streaming",
    async () => {
      const res = await send("/rawtest/part/5", new Uint8Array(1001), octets);
      assert.is(res.status, 400);
      assert.is(res.body.error, "part 5 is too large");

      // A chunked body that never ends: refused once its count passes the cap, having pulled little more.
      let pulled = 0;
      const endless = new ReadableStream<Uint8Array>({
        pull(controller) {
          pulled += 65536;
          controller.enqueue(new Uint8Array(65536));
        },
      });
      const streamed = await send("/rawtest/big", endless, octets, { duplex: "half" } as RequestInit);
      assert.is(streamed.status, 413);
      assert.is(streamed.body.error, "too big");
      assert.ok(pulled < 3_000_000 + 5 * 65536, `pulled ${pulled}`);
    },
  );

  t("a raw body has its own cap, not the 1 MB JSON cap", async () => {
    const res = await send("/rawtest/big", new Uint8Array(2_500_000), octets);
    assert.is(res.status, 200);
    assert.is(res.body.size, 2_500_000);
  });

  t("GraphQL cannot carry bytes: the operation's 415", async () => {
    const res = await graphql(tk, `mutation { r: rawtestPart(index: "1") }`, undefined, { key });
    const err = res.errors?.[0];
    assert.ok(err, JSON.stringify(res));
    assert.is(err.message, "send application/octet-stream", JSON.stringify(err));
  });

  t("multipart text fields become the input object that `input` checks", async () => {
    const f = new FormData();
    f.set("style", JSON.stringify({ size: "large" }));
    f.set("partner_job_id", "abc-1");
    f.set("ignored", "x");
    f.set("video", new Blob([new Uint8Array(321)]), "clip.mp4");
    const res = await send("/rawtest/form", f);
    assert.is(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.input, { style: { size: "large" }, partner_job_id: "abc-1", count: null });
    assert.is(res.body.file, 321);
    assert.is(res.body.body, null);

    const bad = new FormData();
    bad.set("partner_job_id", "not valid!");
    const refused = await send("/rawtest/form", bad);
    assert.is(refused.status, 400);

    const notJson = new FormData();
    notJson.set("style", "{nope");
    const notJsonAnswer = await send("/rawtest/form", notJson);
    assert.equal(
      { status: notJsonAnswer.status, body: errorBody(notJsonAnswer) },
      { status: 400, body: { error: "style must be JSON text" } },
    );

    // A text field sent as a file part is read as its text.
    const asFile = new FormData();
    asFile.set("style", new Blob(['"x"']), "style.json");
    assert.equal((await send("/rawtest/form", asFile)).body.input.style, "x");
  });

  t("the OpenAPI document shows both body kinds", () => {
    const doc = buildOpenApi(tk.kernel.registry, "test") as any;
    const part = doc.paths["/api/v1/partner/rawtest/part/{index}"].post.requestBody.content;
    assert.equal(Object.keys(part), ["application/octet-stream"]);
    assert.is(part["application/octet-stream"].schema.maxLength, 1000);
    assert.equal(Object.keys(doc.paths["/api/v1/partner/rawtest/big"].post.requestBody.content), [
      "application/octet-stream",
      "video/mp4",
    ]);
    const formSchema = doc.paths["/api/v1/partner/rawtest/form"].post.requestBody.content["multipart/form-data"].schema;
    assert.equal(Object.keys(formSchema.properties).sort(), ["partner_job_id", "style", "video"]);
  });

  t.run();
}
