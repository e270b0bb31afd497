// transports/rest/respond.ts readMultipart: the in-place reader of multipart/form-data bodies (a 95 MB
// upload is held once, as the body it came in) agrees with FormData on what browsers and fetch send, and
// refuses what is not a form.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { readMultipart } from "../../transports/rest/respond.ts";

/** The bytes and Content-Type fetch sends for `form`. */
async function encoded(form: FormData): Promise<{ bytes: Uint8Array; type: string }> {
  const res = new Response(form);
  return { bytes: new Uint8Array(await res.arrayBuffer()), type: res.headers.get("content-type")! };
}

const t = suite("readMultipart");

t("what fetch sends: text fields, files with any bytes, empty files, odd names", async () => {
  const binary = new Uint8Array(70_000);
  for (let i = 0; i < binary.length; i++) binary[i] = (i * 7919) & 0xff;
  binary.set(new TextEncoder().encode("\r\n--\r\n\r\n--"), 1000); // delimiter-like bytes inside the file
  const f = new FormData();
  f.set("style", JSON.stringify({ size: "large", note: 'é ✓ "quoted"' }));
  f.set("partner_job_id", "abc-1");
  f.set("video", new Blob([binary], { type: "video/mp4" }), 'my "clip"; name=x.mp4');
  f.set("empty", new Blob([]), "");
  f.set("ünïcode", "välue\r\nwith lines");
  const { bytes, type } = await encoded(f);
  const parts = readMultipart(bytes, type);
  assert.ok(parts);
  const reference = await new Response(bytes as Uint8Array<ArrayBuffer>, {
    headers: { "content-type": type },
  }).formData();
  assert.equal(
    parts!.map((p) => p.name),
    [...reference.keys()],
  );
  for (const p of parts!) {
    const ref = reference.get(p.name)!;
    if (typeof ref === "string") {
      assert.is(p.filename, null);
      assert.is(new TextDecoder().decode(p.bytes), ref);
    } else {
      assert.is(p.filename, ref.name, p.name);
      assert.is(p.contentType, ref.type || "application/octet-stream", p.name);
      assert.equal(p.bytes, new Uint8Array(await ref.arrayBuffer()), p.name);
    }
  }
  // Views into the body, not copies.
  const video = parts!.find((p) => p.name === "video")!;
  assert.is(video.bytes.buffer, bytes.buffer);
});

t("preamble, epilogue, transport padding, a quoted boundary", () => {
  const body = new TextEncoder().encode(
    'preamble\r\n--b"x\r\nContent-Disposition: form-data; name="a"\r\n\r\none\r\n--b"x  \r\ncontent-disposition: FORM-DATA; name=b; filename="f.bin"\r\ncontent-type: application/octet-stream\r\n\r\n\x00\x01\r\n--b"x--\r\nepilogue',
  );
  const parts = readMultipart(body, 'multipart/form-data; boundary="b\\"x"');
  assert.equal(
    parts?.map((p) => [p.name, p.filename, p.contentType, [...p.bytes]]),
    [
      ["a", null, "", [111, 110, 101]],
      ["b", "f.bin", "application/octet-stream", [0, 1]],
    ],
  );
});

t("not a form: null", () => {
  const enc = (s: string) => new TextEncoder().encode(s);
  const type = "multipart/form-data; boundary=zz";
  const cases = [
    ["no boundary", enc('--zz\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--zz--'), "multipart/form-data"],
    ["no delimiter", enc("hello"), type],
    ["no closing delimiter", enc('--zz\r\nContent-Disposition: form-data; name="a"\r\n\r\n1'), type],
    ["headers never end", enc('--zz\r\nContent-Disposition: form-data; name="a"\r\n'), type],
    ["no name", enc("--zz\r\nContent-Disposition: form-data\r\n\r\n1\r\n--zz--"), type],
    ["not form-data", enc('--zz\r\nContent-Disposition: attachment; name="a"\r\n\r\n1\r\n--zz--'), type],
    ["garbage after a delimiter", enc('--zzjunk\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--zz--'), type],
    ["empty", enc(""), type],
  ] as const;
  for (const [what, bytes, ct] of cases) assert.is(readMultipart(bytes, ct), null, what);
  // An empty form is a form.
  assert.equal(readMultipart(enc("--zz--\r\n"), type), []);
});

t.run();
