// Hostile input (issue 14, items 9, 10, 12-16; docs/architecture.md invariant 9) through REST, GraphQL and the admin API on
// every database backend: NUL and other control characters, unpaired surrogates, prototype keys and deep
// nesting answer the kernel's 400 before any plugin rule and before anything is stored; values that are not
// strings are named, never String()-ed; numbers keep their bounds and a price no balance can hold is a 400;
// bodies that are not application/json are 415; and no 4xx changes a balance.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { MAX_INPUT_DEPTH, screenInput } from "../../core/hostile-input.ts";
import { checkCharge } from "../../core/ledger.ts";
import { definePlugin, operation } from "../../core/plugin.ts";
import * as pluginApi from "../../core/plugin-api.ts";
import { ApiError } from "../../lib/api-error.ts";
import { KERNEL_ERRORS } from "../../lib/errors.ts";
import { defineInput, field } from "../../lib/input.ts";
import { queuedThen } from "../../lib/job-states.ts";
import { megabytes } from "../../lib/sizes.ts";
import { IMAGE_ERRORS } from "../../plugins/images/errors.ts";
import { plugins } from "../../plugins/index.ts";
import { METADATA_ERRORS } from "../../plugins/metadata/errors.ts";
import { IMAGE_LIMITS, VIDEO_LIMITS } from "../../plugins/metadata/source.ts";
import { MUSIC_ERRORS } from "../../plugins/music/errors.ts";
import { VIDEO_ERRORS } from "../../plugins/video/errors.ts";
import { createTestKernel, graphql, type TestKernel } from "../../testkit/index.ts";
import { createHttpApp } from "../../transports/http.ts";
import { jsonNestsDeeper } from "../../transports/rest/respond.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { generousLimits } from "../helpers/test-limits.ts";

const K = KERNEL_ERRORS;
const LIMITS = {
  rate_limits: Object.fromEntries(
    [
      "POST /generate-image",
      "POST /generate-video",
      "POST /generate-animation",
      "POST /merge-videos",
      "POST /generate-voiceover",
      "POST /generate-music",
      "POST /extend-music",
      "POST /remove-metadata",
      "POST /social-download",
      "POST /upscale-image",
      "POST /upscale-video",
      "GET /image-status/<id>",
      "POST /huge-price",
    ].map((k) => [k, 100_000]),
  ),
};

// A test plugin whose price is whatever the request says: the kernel's guards on a price, end to end.
const hugePrice = definePlugin({
  name: "huge-price",
  rateLimits: generousLimits("POST /huge-price"),
  jobs: {
    thing: { ...queuedThen("done", "error"), failError: "failed", retries: 0, run: async () => ({ state: "done" }) },
  },
  operations: [
    operation({
      method: "POST",
      path: "/huge-price",
      status: 202,
      input: defineInput({ fields: { rate: field.number(), credits: field.number() } }),
      async handle(ctx) {
        const body = ctx.input as { rate?: number; credits?: number };
        const credits = body.credits ?? ctx.priceFor({ lines: [{ key: ["huge"], rate: body.rate ?? 1 }] });
        const job = await ctx.submitJob({ kind: "thing", state: "queued", credits });
        return { job_id: job.jobId };
      },
    }),
  ],
});

/** A body nested `levels` deep under `field`, as raw JSON text. */
const deepBody = (field: string, levels: number, extra = "") =>
  `{${extra}"${field}": ${"[".repeat(levels)}${"]".repeat(levels)}}`;

for (const backend of await databaseBackends()) {
  const t = suite(`hostile input (${backend.name})`);
  let tk: TestKernel;
  let app: ReturnType<typeof createHttpApp>;
  let partner: { id: string; key: string };
  t.before(async () => {
    tk = await createTestKernel({
      plugins: [...plugins, hugePrice],
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
    });
    app = createHttpApp(tk.kernel, { adminToken: tk.adminToken });
    partner = await tk.partner({ credits: 100_000, limits: LIMITS });
  });
  t.after(async () => {
    await tk.close();
  });

  const balance = async (id = partner.id) =>
    Number(
      (
        await (tk.kernel.database.kysely as any)
          .selectFrom("partners")
          .select("credits_remaining")
          .where("id", "=", id)
          .executeTakeFirstOrThrow()
      ).credits_remaining,
    );
  /** A raw request: the body as given, the headers as given (no default content type). */
  const raw = async (method: string, path: string, body: string | undefined, headers: Record<string, string> = {}) => {
    const res = await app.fetch(
      new Request(`http://mediagate.test${path.startsWith("/api/") ? path : `/api/v1/partner${path}`}`, {
        method,
        body,
        headers: { authorization: `Bearer ${partner.key}`, "user-agent": "mediagate-tests/1.0", ...headers },
      }),
    );
    const text = await res.text();
    return {
      status: res.status,
      body: (res.headers.get("content-type") ?? "").includes("json") ? JSON.parse(text) : text,
    };
  };
  /** Every case must be a 4xx with this text and leave the balance as it was. */
  const refused = async (
    what: string,
    call: () => Promise<{ status: number; body: any }>,
    status: number,
    text: string,
  ) => {
    const before = await balance();
    const res = await call();
    assert.equal([res.status, res.body?.error], [status, text], `${what}: ${JSON.stringify(res.body).slice(0, 300)}`);
    assert.is(await balance(), before, `${what}: the balance did not change`);
  };
  const post = (path: string, body: unknown) => () => tk.request("POST", path, { key: partner.key, body });
  /** Each POST [what, path, body, field] must be refused with a 400 whose text is `text(field)`. */
  const refusedPosts = async (text: (field: string) => string, cases: [string, string, unknown, string][]) => {
    for (const [what, path, body, field] of cases) await refused(what, post(path, body), 400, text(field));
  };

  t("item 12: NUL and other control characters in any text field are a 400 before anything is stored", async () => {
    await refusedPosts(K.controlCharacter, [
      ["prompt", "/generate-image", { prompt: "a\u0000b" }, "prompt"],
      [
        "negative_prompt",
        "/generate-video",
        { prompt: "x", model: "beta-2-direct", duration: 4, quality: "480p", negative_prompt: "\u0000" },
        "negative_prompt",
      ],
      ["voiceover text", "/generate-voiceover", { text: "Hello\u0000", voice_id: "x" }, "text"],
      ["voiceover source", "/generate-voiceover", { text: "Hello", voice_id: "x", source: "lab\u0000el" }, "source"],
      // Not "Music generation failed to start. Credits refunded.": nothing was charged, and nothing failed.
      ["music prompt", "/generate-music", { prompt: "\u0000lofi" }, "prompt"],
      ["music style", "/generate-music", { prompt: "x", style: "a\u0007", title: "t" }, "style"],
      [
        "a nested string",
        "/generate-image",
        { prompt: "x", ref_images: [{ base64: "AAAA", mime_type: "image/png\u001b" }] },
        "ref_images[0].mime_type",
      ],
      ["DEL", "/generate-image", { prompt: "x\u007f" }, "prompt"],
      ["C1", "/generate-image", { prompt: "x\u0085" }, "prompt"],
    ]);
    await refused("a field name", post("/generate-image", { prompt: "x", "a\u0000": 1 }), 400, K.invalidFieldName);
    await refused(
      "a query value",
      () => tk.request("GET", "/images?limit=%00", { key: partner.key }),
      400,
      K.controlCharacter("limit"),
    );
    // A path keeps its percent-escapes (the router does not decode them): looked up as text, found nowhere.
    await refused(
      "a path parameter",
      () => tk.request("GET", "/image-status/svc-%00", { key: partner.key }),
      404,
      "Not found",
    );
    // Tab, line feed and carriage return are text.
    const ok = await tk.request("POST", "/generate-image", {
      key: partner.key,
      body: { prompt: "line one\r\n\tline two" },
    });
    assert.is(ok.status, 202, JSON.stringify(ok.body));
  });

  t("item 13: an unpaired surrogate is a 400, in values and in field names", async () => {
    await refusedPosts(K.illFormedText, [
      ["prompt", "/generate-image", { prompt: "a\ud800b" }, "prompt"],
      [
        "low half",
        "/generate-video",
        { prompt: "\udc00", model: "beta-2-direct", duration: 4, quality: "480p" },
        "prompt",
      ],
      ["voiceover", "/generate-voiceover", { text: "x\ud83d", voice_id: "x" }, "text"],
      ["music", "/generate-music", { prompt: "\ud800" }, "prompt"],
      ["metadata url", "/remove-metadata", { image_url: "https://example.com/\ud800.jpg" }, "image_url"],
    ]);
    await refused("a field name", post("/generate-image", { prompt: "x", "\ud800": 1 }), 400, K.invalidFieldName);
    // A well-formed pair is text.
    const ok = await tk.request("POST", "/generate-image", {
      key: partner.key,
      body: { prompt: "A fox \ud83e\udd8a" },
    });
    assert.is(ok.status, 202, JSON.stringify(ok.body));
  });

  t("item 14: prototype keys, deep nesting and values that are not strings are 400s, never 500s", async () => {
    const json = { "content-type": "application/json" };
    await refused(
      "__proto__",
      () => raw("POST", "/generate-image", '{"prompt": "x", "__proto__": {"polluted": true}}', json),
      400,
      K.reservedFieldName("__proto__"),
    );
    await refused(
      "nested constructor",
      () => raw("POST", "/generate-image", '{"prompt": "x", "ref_images": [{"constructor": 1}]}', json),
      400,
      K.reservedFieldName("ref_images[0].constructor"),
    );
    // 20,000 levels: refused while parsing, before anything builds or walks it.
    await refused(
      "deep image_url",
      () => raw("POST", "/remove-metadata", deepBody("image_url", 20_000), json),
      400,
      K.tooDeep(MAX_INPUT_DEPTH),
    );
    await refused(
      "deep video_url",
      () => raw("POST", "/remove-metadata", deepBody("video_url", 20_000), json),
      400,
      K.tooDeep(MAX_INPUT_DEPTH),
    );
    await refused(
      "deep reference urls",
      () => raw("POST", "/generate-image", deepBody("reference_image_urls", 20_000, '"prompt": "x", '), json),
      400,
      K.tooDeep(MAX_INPUT_DEPTH),
    );
    await refused(
      "just too deep",
      () => raw("POST", "/generate-image", deepBody("x", MAX_INPUT_DEPTH, '"prompt": "", '), json),
      400,
      K.tooDeep(MAX_INPUT_DEPTH),
    );
    // Brackets inside strings are text, not nesting.
    await refused(
      "brackets in a string",
      () => raw("POST", "/generate-image", JSON.stringify({ prompt: "", note: "[".repeat(100) }), json),
      400,
      IMAGE_ERRORS.promptMissing,
    );

    // {"toString": 1} would make String(value) throw; the texts name the kind instead.
    const bad = { toString: 1 };
    await refused(
      "image_url object",
      post("/remove-metadata", { image_url: bad }),
      400,
      METADATA_ERRORS.invalidImageUrl("an object"),
    );
    await refused(
      "video_url array",
      post("/remove-metadata", { video_url: [[[1]]] }),
      400,
      METADATA_ERRORS.invalidVideoUrl("an array"),
    );
    await refused(
      "image_url number",
      post("/remove-metadata", { image_url: 12 }),
      400,
      METADATA_ERRORS.invalidImageUrl("12"),
    );
    await refused(
      "video frame url",
      post("/generate-video", { prompt: "x", model: "beta-2-direct", duration: 4, quality: "480p", image_url: bad }),
      400,
      VIDEO_ERRORS.invalidImageUrl("an object"),
    );
    await refused(
      "video end frame url",
      post("/generate-video", {
        prompt: "x",
        model: "beta-2-direct",
        duration: 4,
        quality: "480p",
        image_url: "https://example.com/a.png",
        end_image_url: bad,
      }),
      400,
      VIDEO_ERRORS.invalidEndImageUrl("an object"),
    );
    await refused(
      "animation start url",
      post("/generate-animation", { prompt: "x", start_image_url: bad, end_image_url: "https://example.com/b.png" }),
      400,
      VIDEO_ERRORS.invalidStartImageUrl("an object"),
    );
    await refused(
      "reference_image_urls item",
      post("/generate-image", { prompt: "x", reference_image_urls: [bad] }),
      400,
      IMAGE_ERRORS.invalidRefUrl("an object"),
    );
    await refused(
      "merge job id",
      post("/merge-videos", { job_ids: [bad, "svc-00000000"] }),
      400,
      VIDEO_ERRORS.mergeInvalidJobId("an object"),
    );
  });

  t("item 15: numbers keep their bounds; a price no balance can hold is the ledger's 400", async () => {
    const video = (duration: number, model = "beta-2-direct") =>
      post("/generate-video", { prompt: "x", model, quality: "480p", duration });
    // biome-ignore lint/correctness/noPrecisionLoss: the request carries 2^53 + 1 on purpose: a duration no double holds exactly
    await refused("2^53 + 1", video(9007199254740993), 400, VIDEO_ERRORS.invalidDuration);
    await refused("1e300", video(1e300), 400, VIDEO_ERRORS.invalidDuration);
    await refused(
      "safe but absurd",
      video(9007199254740991),
      400,
      VIDEO_ERRORS.durationNotSupported(9007199254740991, "beta-2-direct", "any whole number of seconds up to 3600"),
    );
    await refused(
      "an hour and a second",
      video(3601),
      400,
      VIDEO_ERRORS.durationNotSupported(3601, "beta-2-direct", "any whole number of seconds up to 3600"),
    );
    const extend = { source: { kind: "svc_music", ref: "svc-00000000", track: 1e300 }, continue_at: 1 };
    await refused(
      "music track",
      () =>
        tk.request("POST", "/extend-music", {
          key: partner.key,
          body: extend,
          headers: { "idempotency-key": "hostile-track-1" },
        }),
      400,
      MUSIC_ERRORS.invalidSource,
    );
    // Through priceFor (as soon as the price is known) and through the ledger itself (a plugin's own number).
    await refused("price", post("/huge-price", { rate: 1.26e17 }), 400, K.chargeTooLarge);
    await refused("charge", post("/huge-price", { credits: 1.26e17 }), 400, K.chargeTooLarge);
    await refused(
      "infinite charge",
      () => raw("POST", "/huge-price", '{"credits": 1e400}', { "content-type": "application/json" }),
      400,
      K.chargeTooLarge,
    );
    const fine = await tk.request("POST", "/huge-price", { key: partner.key, body: { rate: 3 } });
    assert.is(fine.status, 202, JSON.stringify(fine.body));
  });

  t(
    "item 16: only application/json (and the declared multipart forms) are read; anything else is 415 before a charge",
    async () => {
      const body = JSON.stringify({ prompt: "A red kite" });
      // [what, body, content type]: each is a 415 with the same text.
      const unreadable: [string, string, string | undefined][] = [
        ["text/plain", body, "text/plain"],
        ["XML", "<prompt>A red kite</prompt>", "application/xml"],
        ["form", "prompt=A+red+kite", "application/x-www-form-urlencoded"],
        ["multipart where none is declared", "--x\r\n\r\n--x--", "multipart/form-data; boundary=x"],
        ["no type", body, undefined],
        ["latin-1 JSON", body, "application/json; charset=iso-8859-1"],
      ];
      for (const [what, text, type] of unreadable) {
        const headers: Record<string, string> = type === undefined ? {} : { "content-type": type };
        await refused(what, () => raw("POST", "/generate-image", text, headers), 415, K.unsupportedContentType);
      }
      await refused(
        "bytes that are not UTF-8",
        () =>
          raw("POST", "/generate-image", new Uint8Array([0x7b, 0x22, 0x70, 0xff, 0x22, 0x3a, 0x31, 0x7d]) as any, {
            "content-type": "application/json",
          }),
        400,
        K.bodyNotJson,
      );
      // extend-music words its own 415 (spec part 3), an untyped empty body included.
      const idem = { "idempotency-key": "hostile-input-1" };
      await refused(
        "extend-music text/plain",
        () => raw("POST", "/extend-music", body, { ...idem, "content-type": "text/plain" }),
        415,
        MUSIC_ERRORS.unsupportedType,
      );
      await refused(
        "extend-music untyped empty",
        () => raw("POST", "/extend-music", undefined, idem),
        415,
        MUSIC_ERRORS.unsupportedType,
      );
      // Choice: an empty body without a type is read as {} (curl -X POST), so the operation's own rules answer.
      await refused(
        "untyped empty body",
        () => raw("POST", "/generate-image", undefined),
        400,
        IMAGE_ERRORS.promptMissing,
      );
      // application/json with a UTF-8 charset, in any spelling, is JSON.
      const ok = await raw("POST", "/generate-image", body, { "content-type": "Application/JSON; Charset=UTF-8" });
      assert.is(ok.status, 202, JSON.stringify(ok.body));
    },
  );

  t("the same screen over GraphQL: the REST texts, status 400, no charge", async () => {
    const before = await balance();
    const gql = async (query: string, variables: Record<string, unknown>) => {
      const res = await graphql(tk, query, variables, { key: partner.key });
      return { message: res.errors?.[0]?.message, status: res.errors?.[0]?.extensions?.status };
    };
    const image = "mutation($input: GenerateImageInput!) { generateImage(input: $input) { public_ids } }";
    assert.equal(await gql(image, { input: { prompt: "a\u0000b" } }), {
      message: K.controlCharacter("prompt"),
      status: 400,
    });
    assert.equal(await gql(image, { input: { prompt: "a\ud800b" } }), {
      message: K.illFormedText("prompt"),
      status: 400,
    });
    assert.equal(await gql(image, { input: { prompt: "x", reference_image_urls: ["https://example.com/\u0000"] } }), {
      message: K.controlCharacter("reference_image_urls[0]"),
      status: 400,
    });
    const voice = "mutation($input: GenerateVoiceoverInput!) { generateVoiceover(input: $input) { job_id } }";
    assert.equal(await gql(voice, { input: { text: "x", voice_id: "y", source: "\ud800" } }), {
      message: K.illFormedText("source"),
      status: 400,
    });
    const music = "mutation($input: GenerateMusicInput!) { generateMusic(input: $input) { job_id } }";
    assert.equal(await gql(music, { input: { prompt: "\u0000" } }), {
      message: K.controlCharacter("prompt"),
      status: 400,
    });
    const video = "mutation($input: GenerateVideoInput!) { generateVideo(input: $input) { job_id } }";
    assert.equal(
      await gql(video, { input: { prompt: "x", model: "beta-2-direct", quality: "480p", duration: 3601 } }),
      {
        message: VIDEO_ERRORS.durationNotSupported(3601, "beta-2-direct", "any whole number of seconds up to 3600"),
        status: 400,
      },
    );
    assert.equal(await gql("query($id: String!) { imageStatus(id: $id) { status } }", { id: "svc-\u0000" }), {
      message: K.controlCharacter("id"),
      status: 400,
    });
    assert.is(await balance(), before);
  });

  t("the admin API: the same screen, JSON only, and bounded credits", async () => {
    const admin = (
      method: string,
      path: string,
      body?: unknown,
      headers: Record<string, string> = { "content-type": "application/json" },
    ) =>
      Promise.resolve(
        app.fetch(
          new Request(`http://mediagate.test/api/v1/admin${path}`, {
            method,
            headers: { authorization: `Bearer ${tk.adminToken}`, ...headers },
            body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
          }),
        ),
      ).then(async (r: Response) => ({ status: r.status, body: await r.json() }));
    const expect = async (res: Promise<{ status: number; body: any }>, status: number, text: string) => {
      const r = await res;
      assert.equal([r.status, r.body.error], [status, text], JSON.stringify(r.body));
    };
    await expect(admin("POST", "/partners", { name: "Acme\u0000" }), 400, K.controlCharacter("name"));
    await expect(admin("POST", "/partners", { name: "Acme\ud800" }), 400, K.illFormedText("name"));
    await expect(
      admin("POST", "/partners", '{"name": "Acme", "__proto__": {}}'),
      400,
      K.reservedFieldName("__proto__"),
    );
    await expect(
      admin("POST", "/partners", deepBody("features", 20_000, '"name": "Acme", ')),
      400,
      K.tooDeep(MAX_INPUT_DEPTH),
    );
    await expect(
      admin("POST", "/partners", JSON.stringify({ name: "Acme" }), { "content-type": "text/plain" }),
      415,
      K.unsupportedContentType,
    );
    await expect(admin("PATCH", `/partners/${partner.id}`, { name: "x\u0000" }), 400, K.controlCharacter("name"));
    await expect(
      admin("POST", `/partners/${partner.id}/credits`, { amount: 5, type: "purchase", description: "top\u0000up" }),
      400,
      K.controlCharacter("description"),
    );
    await expect(admin("GET", "/partners/svc-%00"), 404, "Partner not found");
    // An escape that is not UTF-8 is the router's own 400.
    assert.is((await admin("GET", "/partners/%ED%A0%80")).status, 400);
    const before = await balance();
    await expect(
      admin("POST", `/partners/${partner.id}/credits`, {
        amount: Number.MAX_SAFE_INTEGER,
        type: "purchase",
        description: "too much",
      }),
      400,
      K.balanceTooLarge,
    );
    await expect(
      admin("POST", `/partners/${partner.id}/credits`, { amount: 2 ** 60, type: "purchase", description: "unsafe" }),
      400,
      "amount must be a non-zero integer",
    );
    assert.is(await balance(), before);
  });

  t.run();
}

// Item 10: the configured outbound guard decides reference_image_urls, as it does every other URL field.
{
  const t = suite("reference_image_urls follow ALLOW_PRIVATE_URLS");
  let open: TestKernel;
  let strict: TestKernel;
  t.before(async () => {
    open = await createTestKernel({ plugins, env: { ALLOW_PRIVATE_URLS: "1" } });
    strict = await createTestKernel({ plugins });
  });
  t.after(async () => {
    await open.close();
    await strict.close();
  });

  t("a loopback reference is accepted where private URLs are allowed, refused where not", async () => {
    const body = { prompt: "A lighthouse", reference_image_urls: ["http://127.0.0.1:9/ref.png"] };
    const { key } = await open.partner();
    const accepted = await open.request("POST", "/generate-image", { key, body });
    assert.is(accepted.status, 202, JSON.stringify(accepted.body));
    const p = await strict.partner();
    const refused = await strict.request("POST", "/generate-image", { key: p.key, body });
    assert.equal([refused.status, refused.body.error], [400, IMAGE_ERRORS.invalidRefUrl("http://127.0.0.1:9/ref.png")]);
    const credits = await strict.request("GET", "/credits", { key: p.key });
    assert.is(credits.body.credits_remaining, 1000);
  });

  t("the plugin API has no guard but the configured one", () => {
    assert.not.ok("checkUrl" in pluginApi, "checkUrl is not exported to plugins");
    assert.not.ok("createOutboundGuard" in pluginApi, "createOutboundGuard is not exported to plugins");
    assert.is(pluginApi.megabytes(100), 100_000_000);
  });

  t.run();
}

// Item 9: the spec's megabytes are decimal, and the cap holds while the bytes stream in.
{
  const t = suite("remove-metadata size caps in the spec's megabytes");
  const CHUNK = new Uint8Array(1_000_000);
  const server = createServer((req, res) => {
    // 101,000,000 bytes, streamed without a Content-Length: only counting while reading can refuse them.
    const total = req.url === "/big.mp4" ? 101_000_000 : 0;
    res.writeHead(200, { "content-type": "video/mp4" });
    let sent = 0;
    const more = () => {
      while (sent < total) {
        sent += CHUNK.length;
        if (!res.write(CHUNK)) return void res.once("drain", more);
      }
      res.end();
    };
    res.on("close", () => (sent = total));
    more();
  });
  let tk: TestKernel;
  let base = "";
  t.before(async () => {
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    tk = await createTestKernel({ plugins, env: { ALLOW_PRIVATE_URLS: "1" } });
  });
  t.after(async () => {
    await tk.close();
    server.close();
  });

  t("megabytes() is decimal and every metadata cap uses it", () => {
    assert.is(megabytes(1), 1_000_000);
    assert.is(megabytes(100), 100_000_000);
    assert.is(IMAGE_LIMITS.maxBytes, 20_000_000);
    assert.is(VIDEO_LIMITS.maxBytes, 100_000_000);
  });

  t("a 101,000,000-byte video is the spec's 413, not a 200", async () => {
    const { key } = await tk.partner();
    const res = await tk.request("POST", "/remove-metadata", { key, body: { video_url: `${base}/big.mp4` } });
    assert.equal([res.status, res.body.error], [413, METADATA_ERRORS.videoTooLarge]);
  });

  t.run();
}

// The screen and the parser's nesting count on their own.
{
  const t = suite("screenInput and jsonNestsDeeper");
  t("document order, paths, and no recursion", () => {
    assert.is(screenInput({ a: "ok", b: ["x", { c: "\u0000" }] }), K.controlCharacter("b[1].c"));
    assert.is(screenInput({ a: "\ud800", b: "\u0000" }), K.illFormedText("a"));
    assert.is(screenInput({ ["x".repeat(300)]: "\u0001" }), K.controlCharacter(`${"x".repeat(100)}...`));
    let deep: unknown = "leaf";
    for (let i = 0; i < 100_000; i++) deep = [deep];
    assert.is(screenInput({ deep }), K.tooDeep(MAX_INPUT_DEPTH));
    let ok: unknown = 1;
    for (let i = 0; i < MAX_INPUT_DEPTH - 1; i++) ok = [ok];
    assert.is(screenInput({ ok }), null);
    assert.is(screenInput({ n: 1, t: true, z: null, s: "tab\tnew\nline\r" }), null);
  });
  t("nesting counts brackets outside strings only", () => {
    assert.is(jsonNestsDeeper('{"a": "[[[[[[", "b": "\\"[[[["}', 1), false);
    assert.is(jsonNestsDeeper('{"a": [[1]]}', 2), true);
    assert.is(jsonNestsDeeper('{"a": [[1]]}', 3), false);
    assert.is(jsonNestsDeeper('{"a": "\\\\", "b": [[1]]}', 2), true);
  });
  t("the ledger's guard: too large is the partner's 400, a bad number a plugin's bug", () => {
    assert.throws(
      () => checkCharge(1.26e17),
      (e: unknown) => e instanceof ApiError && e.status === 400 && e.message === K.chargeTooLarge,
    );
    assert.throws(
      () => checkCharge(Infinity),
      (e: unknown) => e instanceof ApiError && e.status === 400,
    );
    assert.throws(
      () => checkCharge(-1),
      (e: unknown) => !(e instanceof ApiError),
    );
    assert.throws(
      () => checkCharge(Number.NaN),
      (e: unknown) => !(e instanceof ApiError),
    );
    checkCharge(0);
    checkCharge(Number.MAX_SAFE_INTEGER);
  });
  t.run();
}
