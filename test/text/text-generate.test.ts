// `text.generate` (plugins/text): the deterministic sandbox (prompt repair removes what is unsafe and keeps the
// rest; the fail marker; unknown tasks answered deterministically, valid JSON in JSON mode), and the
// OpenAI-compatible chat adapter against a local stand-in answering like the real API (request shape, key
// sent and never echoed in errors, error statuses, time-out, malformed answers, the outbound guard), chosen by
// TEXT_GENERATE_URL; bad values stop the boot by name.
import type { IncomingMessage } from "node:http";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { TextGenerationError, type TextGenerationRequest } from "../../contracts/text.ts";
import { ConfigError } from "../../lib/plugin-config.ts";
import { textConfig } from "../../plugins/text/config.ts";
import text from "../../plugins/text/index.ts";
import { endpointOf } from "../../plugins/text/openai-chat.ts";
import { digest, repairPrompt, SANDBOX_TASKS } from "../../plugins/text/sandbox-tasks.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { chatCompletion, chatStandIn, type StandInReply } from "./chat-stand-in.ts";

// Shaped like no API key at all, so only the adapter's own redaction (not the sk- pattern) keeps it out.
const KEY = "tg0123456789abcdefSECRET";
const ask = (over: Partial<TextGenerationRequest> = {}): TextGenerationRequest => ({
  task: "x",
  instructions: "i",
  input: "j",
  ...over,
});

// ---------------------------------------------------------------------------------------------------------
const sandbox = suite("text.generate sandbox");

sandbox(
  "prompt repair removes the unsafe marker and words, keeps the rest (other markers too), says what it did",
  () => {
    const out = repairPrompt(
      'A knight [sandbox:unsafe] in a gory battle,\t covered in Blood, says "onward" [sandbox:flaky]',
    );
    assert.is(out.text, 'A knight in a battle, covered in, says "onward" [sandbox:flaky]');
    assert.is(out.notes, "Removed: [sandbox:unsafe], gory, blood.");
    assert.equal(repairPrompt("A calm lake at dawn."), {
      text: "A calm lake at dawn.",
      notes: "Nothing needed changing.",
    });
  },
);

sandbox("prompt repair: whole words only, compounds whole, any case, once in the notes, line breaks kept", () => {
  const out = repairPrompt("A bloodhound  and a GORE-soaked  skilled  gunsmith.\n\n  NUDE nude statue, gore's end");
  assert.is(out.text, "A bloodhound and a skilled gunsmith.\nstatue, end");
  assert.is(out.notes, "Removed: gore-soaked, nude, gore's.");
  // The marker alone, nothing else unsafe.
  assert.equal(repairPrompt("[sandbox:unsafe] a cat"), { text: "a cat", notes: "Removed: [sandbox:unsafe]." });
});

sandbox("unknown tasks: a digest from the input alone; tasks are one registry entry each", () => {
  assert.equal(digest(ask({ input: "Buy now.  Great deals today!" })), {
    text: "Buy now. (5 words)",
    notes: "Sandbox digest of the input.",
  });
  assert.is(digest(ask({ input: "" })).text, "(0 words)");
  assert.equal(JSON.parse(digest(ask({ task: "some-later-task", input: "One line no stop", json: true })).text), {
    task: "some-later-task",
    summary: "One line no stop",
    words: 4,
  });
  assert.equal(Object.keys(SANDBOX_TASKS), ["prompt-repair", "ad-analysis"]);
  // A task that is not given its input (ad analysis: the measured facts) fails as a provider would.
  assert.throws(
    () => SANDBOX_TASKS["ad-analysis"]!(ask({ task: "ad-analysis", input: "Buy now.", json: true })),
    (e: unknown) => e instanceof TextGenerationError,
  );
});

sandbox(
  "through the kernel: sandbox without TEXT_GENERATE_URL, fail marker, deterministic, JSON valid, maxChars, abort",
  async () => {
    const tk = await createTestKernel({ plugins: [text] });
    try {
      const gen = tk.kernel.capability("text.generate");
      const r = await gen.generate(ask({ task: "prompt-repair", input: "storm [sandbox:unsafe] of gore" }));
      assert.equal(r, { text: "storm of", notes: "Removed: [sandbox:unsafe], gore.", provider: "sandbox" });
      const asJson = await gen.generate(ask({ task: "prompt-repair", input: "a naked blade", json: true }));
      assert.equal(JSON.parse(asJson.text), { prompt: "a blade", notes: "Removed: naked." });
      for (const task of ["prompt-repair", "ad-analysis"]) {
        const err = await gen.generate(ask({ task, input: "x [sandbox:fail] gore" })).catch((e) => e);
        assert.instance(err, TextGenerationError, task);
      }
      const a = await gen.generate(
        ask({ task: "some-later-task", instructions: "analyse", input: "Buy now. Great deals today!", json: true }),
      );
      const b = await gen.generate(
        ask({ task: "some-later-task", instructions: "other words", input: "Buy now. Great deals today!", json: true }),
      );
      assert.equal(a, b);
      assert.equal(JSON.parse(a.text), { task: "some-later-task", summary: "Buy now.", words: 5 });
      const prose = await gen.generate(ask({ task: "some-later-task", input: "Buy now. Great deals today!" }));
      assert.is(prose.text, "Buy now. (5 words)");
      assert.instance(
        await gen.generate(ask({ input: "a ".repeat(50), maxChars: 5 })).catch((e) => e),
        TextGenerationError,
      );
      const aborted = AbortSignal.abort(new Error("gone"));
      const err = await gen.generate(ask({ signal: aborted })).catch((e) => e);
      assert.is(err.message, "gone");
    } finally {
      await tk.close();
    }
  },
);

sandbox.run();

// ---------------------------------------------------------------------------------------------------------
// A stand-in for the chat-completions API: each request answered by the current script.
type Script = (req: IncomingMessage, body: any) => StandInReply;
const answer = (content: unknown, extra: Record<string, unknown> = {}) => ({
  status: 200,
  body: chatCompletion(content, "test-model", extra),
});

async function standIn() {
  let script: Script = () => answer("ok");
  const api = await chatStandIn((req, body) => script(req, body));
  return { ...api, set: (s: Script) => void (script = s) };
}

const adapter = suite("text.generate OpenAI-compatible adapter");
let api: Awaited<ReturnType<typeof standIn>>;
let tk: TestKernel;
adapter.before(async () => {
  api = await standIn();
  tk = await createTestKernel({
    plugins: [text],
    env: {
      TEXT_GENERATE_URL: api.url,
      TEXT_GENERATE_KEY: KEY,
      TEXT_GENERATE_MODEL: "test-model",
      TEXT_GENERATE_TIMEOUT_MS: "1500",
      ALLOW_PRIVATE_URLS: "1",
    },
  });
});
adapter.after(async () => {
  await tk.close();
  await api.close();
});

adapter("the endpoint: base URL + /v1/chat/completions, /v1 not doubled, a full URL as is", () => {
  assert.is(endpointOf("https://api.openai.com"), "https://api.openai.com/v1/chat/completions");
  assert.is(endpointOf("http://llm.local:8000/v1/"), "http://llm.local:8000/v1/chat/completions");
  assert.is(endpointOf("https://host/openai/v1/chat/completions"), "https://host/openai/v1/chat/completions");
});

adapter("sends the chat request the API expects and returns its content", async () => {
  api.set(() => answer("A calm knight."));
  const gen = tk.kernel.capability("text.generate");
  const r = await gen.generate({ task: "prompt-repair", instructions: "Rewrite safely.", input: "A gory knight." });
  assert.equal(r, { text: "A calm knight.", provider: "openai-compatible" });
  const last = api.seen.at(-1)!;
  assert.is(last.method, "POST");
  assert.is(last.url, "/v1/chat/completions");
  assert.is(last.headers.authorization, `Bearer ${KEY}`);
  assert.match(String(last.headers["content-type"]), /^application\/json/);
  // The token cap (config.ts answerTokens): max_tokens to a server that is not OpenAI's own.
  assert.equal(last.body, {
    model: "test-model",
    temperature: 0,
    max_tokens: 16_384,
    messages: [
      { role: "system", content: "Rewrite safely." },
      { role: "user", content: "A gory knight." },
    ],
  });
});

adapter("JSON mode asks for a json_object and wants a JSON object back", async () => {
  const gen = tk.kernel.capability("text.generate");
  api.set(() => answer('{"summary":"Buy now.","words":5}'));
  const r = await gen.generate(
    ask({ task: "ad-analysis", instructions: "Answer JSON.", input: "Buy now.", json: true }),
  );
  assert.equal(JSON.parse(r.text), { summary: "Buy now.", words: 5 });
  const sent = api.seen.at(-1)!.body;
  assert.equal(sent.response_format, { type: "json_object" });
  assert.equal(sent.messages, [
    { role: "system", content: "Answer JSON." },
    { role: "user", content: "Buy now." },
  ]);
});

adapter("every failure is a TextGenerationError that never carries the key", async () => {
  const gen = tk.kernel.capability("text.generate");
  const cases: Array<[string, Script, Partial<TextGenerationRequest>?, RegExp?]> = [
    [
      "401 echoing the key",
      () => ({
        status: 401,
        body: { error: { message: `Incorrect API key provided: ${KEY}`, type: "invalid_request_error" } },
      }),
      {},
      /answered 401$/,
    ],
    [
      "403 echoing part of the key",
      () => ({ status: 403, body: { error: { message: `key ${KEY.slice(0, 12)}*** is not allowed` } } }),
      {},
      /answered 403$/,
    ],
    [
      "500 with the key in its message",
      () => ({ status: 500, body: { error: { message: `server error for ${KEY}` } } }),
      {},
      /answered 500: server error for \[redacted\]/,
    ],
    ["500 with no JSON", () => ({ status: 500, body: "upstream exploded" }), {}, /answered 500$/],
    ["429", () => ({ status: 429, body: { error: { message: "Rate limit reached" } } }), {}, /429: Rate limit reached/],
    ["malformed body", () => ({ status: 200, body: "<html>" }), {}, /malformed JSON/],
    ["no choices", () => ({ status: 200, body: { choices: [] } }), {}, /no choices/],
    ["empty content", () => answer("  "), {}, /no content/],
    [
      "null content, a refusal",
      () => answer(null, { message: { role: "assistant", content: null, refusal: "I can't." } }),
      {},
      /refused/,
    ],
    ["cut off", () => answer("A knight in a", { finish_reason: "length" }), {}, /cut off/],
    ["over maxChars", () => answer("x".repeat(101)), { maxChars: 100 }, /101 characters, over the 100/],
    ["invalid JSON in JSON mode", () => answer("not json"), { json: true }, /invalid JSON/],
    ["a JSON array in JSON mode", () => answer("[1]"), { json: true }, /not an object/],
    ["time-out", () => "hang", {}, /timeout/],
  ];
  for (const [what, script, over, pattern] of cases) {
    api.set(script);
    const err = await gen.generate(ask(over)).catch((e) => e);
    assert.instance(err, TextGenerationError, what);
    assert.not.ok(String(err.message).includes("SECRET"), `${what}: ${err.message}`);
    assert.not.ok(String(err.message).includes(KEY.slice(0, 12)), `${what}: ${err.message}`);
    if (pattern) assert.match(err.message, pattern, `${what}: ${err.message}`);
  }
});

adapter("the caller's abort is its own reason, not a provider failure", async () => {
  api.set(() => "hang");
  const controller = new AbortController();
  const pending = tk.kernel
    .capability("text.generate")
    .generate(ask({ signal: controller.signal }))
    .catch((e) => e);
  setTimeout(() => controller.abort(new Error("client went away")), 50);
  const err = await pending;
  assert.not.instance(err, TextGenerationError);
  assert.is(err.message, "client went away");
});

adapter("no key: no Authorization header; a full URL is used as is", async () => {
  const other = await createTestKernel({
    plugins: [text],
    env: { TEXT_GENERATE_URL: `${api.url}/custom/v1/chat/completions`, ALLOW_PRIVATE_URLS: "1" },
  });
  try {
    api.set(() => answer("fine"));
    const r = await other.kernel.capability("text.generate").generate(ask());
    assert.is(r.text, "fine");
    const last = api.seen.at(-1)!;
    assert.is(last.url, "/custom/v1/chat/completions");
    assert.is(last.headers.authorization, undefined);
    assert.is(last.body.model, "gpt-4o-mini");
  } finally {
    await other.close();
  }
});

adapter(
  "the outbound guard: an endpoint on a private address is refused without ALLOW_PRIVATE_URLS, nothing sent",
  async () => {
    const strict = await createTestKernel({
      plugins: [text],
      env: { TEXT_GENERATE_URL: api.url, TEXT_GENERATE_KEY: KEY },
    });
    try {
      const before = api.seen.length;
      const err = await strict.kernel
        .capability("text.generate")
        .generate(ask())
        .catch((e) => e);
      assert.instance(err, TextGenerationError);
      // The guard refuses a plain-http loopback URL on its scheme, a private https one on its address.
      assert.match(err.message, /invalid_url|not_public/);
      assert.not.ok(err.message.includes("SECRET"));
      assert.is(api.seen.length, before);
    } finally {
      await strict.close();
    }
  },
);

adapter("bad values stop the boot by name", async () => {
  const err = await createTestKernel({ plugins: [text], env: { TEXT_GENERATE_URL: "ftp://example.com" } }).catch(
    (e) => e,
  );
  assert.instance(err, ConfigError);
  assert.ok(err.message.startsWith("TEXT_GENERATE_URL "), err.message);
  // The rest read as the kernel reads them at boot (textConfig.read), without a kernel each.
  const bad: Array<[Record<string, string>, string]> = [
    [{ TEXT_GENERATE_URL: "https://user:pw@example.com" }, "TEXT_GENERATE_URL"],
    [{ TEXT_GENERATE_URL: "not a url" }, "TEXT_GENERATE_URL"],
    [{ TEXT_GENERATE_URL: "https://example.com/v1?key=x" }, "TEXT_GENERATE_URL"],
    [{ TEXT_GENERATE_TIMEOUT_MS: "soon" }, "TEXT_GENERATE_TIMEOUT_MS"],
    [{ TEXT_GENERATE_TIMEOUT_MS: "0" }, "TEXT_GENERATE_TIMEOUT_MS"],
    [{ TEXT_GENERATE_TIMEOUT_MS: "600001" }, "TEXT_GENERATE_TIMEOUT_MS"],
    [{ TEXT_GENERATE_MODEL: "gpt 4" }, "TEXT_GENERATE_MODEL"],
  ];
  for (const [env, name] of bad) {
    const e = (() => {
      try {
        return textConfig.read(env);
      } catch (caught) {
        return caught;
      }
    })();
    assert.instance(e, ConfigError, JSON.stringify(env));
    assert.ok((e as Error).message.startsWith(`${name} `), (e as Error).message);
  }
  // Unset: the sandbox and the defaults; a trailing slash dropped.
  assert.equal(textConfig.read({}), { url: undefined, key: undefined, model: "gpt-4o-mini", timeoutMs: 60_000 });
  assert.is(textConfig.read({ TEXT_GENERATE_URL: "https://api.openai.com/" }).url, "https://api.openai.com");
});

adapter.run();
