// transports/rest/json-object.ts: JSON object bodies parsed inline below JSON_THREAD_BYTES and in a worker
// thread from it on, with the same object or the same 400 text either way; the value cap (MAX_JSON_VALUES)
// counted without parsing; and the multipart reader's part cap (respond.ts MULTIPART_MAX_PARTS).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { MAX_INPUT_DEPTH } from "../../core/hostile-input.ts";
import { ApiError } from "../../lib/api-error.ts";
import { KERNEL_ERRORS } from "../../lib/errors.ts";
import {
  JSON_THREAD_BYTES,
  jsonShape,
  MAX_JSON_VALUES,
  parseJsonObject,
  readJsonObject,
} from "../../transports/rest/json-object.ts";
import { MULTIPART_MAX_PARTS, readMultipart } from "../../transports/rest/respond.ts";

const t = suite("JSON object bodies and multipart parts");
const enc = (s: string) => new TextEncoder().encode(s);
/** The text padded with spaces (insignificant in JSON) to `size` bytes. */
const padded = (text: string, size: number) => enc(text + " ".repeat(Math.max(0, size - enc(text).length)));

async function outcome(bytes: Uint8Array): Promise<unknown> {
  try {
    return { value: await readJsonObject(bytes) };
  } catch (err) {
    assert.instance(err, ApiError);
    return { status: (err as ApiError).status, error: (err as ApiError).message };
  }
}

t("values and members are counted across levels, strings skipped whole", () => {
  assert.is(jsonShape('{"a":[1,2,3],"b":{"c":"[,,,]"}}', 32, 6), "ok");
  assert.is(jsonShape('{"a":[1,2,3],"b":{"c":"[,,,]"}}', 32, 5), "tooMany");
  assert.is(jsonShape("{}", 32, 0), "ok");
  assert.is(jsonShape('{"a": [ ] }', 32, 1), "ok");
  assert.is(jsonShape('{"a":[[1]]}', 2, 99), "tooDeep");
});

t("the same answer inline and in a thread: objects, each 400, empty bodies", async () => {
  const deep = `{"a":${"[".repeat(MAX_INPUT_DEPTH + 1)}${"]".repeat(MAX_INPUT_DEPTH + 1)}}`;
  const many = `{"a":[${Array(MAX_JSON_VALUES).fill(0).join(",")}]}`;
  const cases: Array<[string, string | Uint8Array, unknown]> = [
    ["an object", '{"prompt":"héllo","n":[1,{"x":null}]}', { value: { prompt: "héllo", n: [1, { x: null }] } }],
    ["empty", "", { value: {} }],
    ["an array", "[1]", { status: 400, error: KERNEL_ERRORS.bodyNotJson }],
    ["not JSON", '{"a":', { status: 400, error: KERNEL_ERRORS.bodyNotJson }],
    ["not UTF-8", Uint8Array.from([0x7b, 0xff, 0x7d]), { status: 400, error: KERNEL_ERRORS.bodyNotJson }],
    ["too deep", deep, { status: 400, error: KERNEL_ERRORS.tooDeep(MAX_INPUT_DEPTH) }],
    ["too many values", many, { status: 400, error: KERNEL_ERRORS.tooManyValues(MAX_JSON_VALUES) }],
  ];
  for (const [what, body, expected] of cases) {
    const raw = typeof body === "string" ? enc(body) : body;
    assert.ok(raw.length < JSON_THREAD_BYTES, what);
    assert.equal(await outcome(raw), expected, `${what}, inline`);
    // Padded past the threshold: parsed in a thread. (An empty body padded is still empty: all spaces.)
    const big = new Uint8Array(JSON_THREAD_BYTES + 10).fill(0x20);
    big.set(raw);
    assert.equal(await outcome(big), expected, `${what}, in a thread`);
  }
});

t("a big body of one long string comes back whole from the thread; the sync parser agrees", async () => {
  const text = JSON.stringify({ image_base64: "QUJD".repeat(1_000_000), n: 1 });
  const bytes = padded(text, 0);
  assert.ok(bytes.length >= JSON_THREAD_BYTES);
  assert.equal(await readJsonObject(bytes), JSON.parse(text));
  assert.equal(parseJsonObject(bytes), JSON.parse(text));
});

t("multipart: MULTIPART_MAX_PARTS parts are read, one more is not a body we read", () => {
  const body = (n: number) =>
    enc(
      `${Array.from({ length: n }, (_, i) => `--b\r\nContent-Disposition: form-data; name="f${i}"\r\n\r\nx\r\n`).join("")}--b--\r\n`,
    );
  assert.is(readMultipart(body(MULTIPART_MAX_PARTS), "multipart/form-data; boundary=b")?.length, MULTIPART_MAX_PARTS);
  assert.is(readMultipart(body(MULTIPART_MAX_PARTS + 1), "multipart/form-data; boundary=b"), null);
});

t.run();
