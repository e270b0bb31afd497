// Issue 45, "Bounded parsers", against a real server (test/security/under-attack.ts): byte floods that made
// the format walkers run for seconds on the event loop or hold an object per item. Each must be refused with
// the area's 4xx before any charge, while /healthz keeps answering; the worst /healthz answer and the peak
// RSS of each are printed at the end (measurements, not assertions).
//
// - captions: 30 MB of 8-byte `moof` boxes as a single upload and as a chunked session (4 parts); a `moov`
//   of 8-byte children (was accepted and charged);
// - remove-metadata: a PNG of 1.6 M empty tEXt chunks, a JPEG of 4.9 M COM segments (base64, 26 MB);
// - multipart: 65 parts, and a flood of 300,000 tiny parts;
// - a 27 MB JSON body of 13 M numbers (within remove-metadata's byte cap).
import { pngChunk as writePngChunk } from "../../lib/formats/png.ts";
import { box, ftyp, mdatHeader, moov } from "../captions/uploads-mp4.ts";
import { attackSuite, partnerPost, unchargedAttack } from "./under-attack.ts";

const MB = 1_000_000;
const FLOOD_BYTES = 30 * MB;
const CHUNK = 8_388_608;

// --- payloads, built once ------------------------------------------------------------------------------------

const concat = (parts: Uint8Array[]) =>
  Buffer.concat(parts.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength)));

/** `count` copies of an 8-byte empty box of `type`. */
function emptyBoxes(type: string, count: number): Uint8Array {
  const one = box(type);
  const out = new Uint8Array(count * 8);
  for (let i = 0; i < count; i++) out.set(one, i * 8);
  return out;
}

/** ftyp, a movie header with a video track and no duration, then 8-byte moofs to `total` bytes. */
function moofFlood(total: number): Buffer {
  const head = concat([ftyp(), moov({ seconds: 0, emptyDurations: true })]);
  return concat([head, emptyBoxes("moof", Math.floor((total - head.length) / 8))]);
}

/** A playable-looking 10 s movie whose moov holds its headers and then millions of 8-byte `free` children. */
function moovFlood(total: number): Buffer {
  const real = moov({ seconds: 10 });
  const filler = emptyBoxes("free", Math.floor((total - real.length - 200) / 8));
  const big = concat([real, filler]);
  big.writeUInt32BE(big.length, 0);
  return concat([ftyp(), big, mdatHeader(8), new Uint8Array(8)]);
}

/** A PNG chunk as stored (lib/formats/png.ts's writer, as a Buffer to concatenate). */
const pngChunk = (type: string, data: Uint8Array) => Buffer.from(writePngChunk({ type, data }));

/** A 1x1 PNG with `count` empty tEXt chunks between IHDR and IDAT. */
function pngTextFlood(count: number): Buffer {
  const ihdr = Buffer.from([0, 0, 0, 1, 0, 0, 0, 1, 8, 0, 0, 0, 0]);
  const text = pngChunk("tEXt", new Uint8Array(0));
  const flood = Buffer.alloc(count * text.length);
  for (let i = 0; i < count; i++) text.copy(flood, i * text.length);
  const idat = pngChunk("IDAT", Uint8Array.from([0x78, 0x9c, 0x63, 0x60, 0x00, 0x00, 0x00, 0x02, 0x00, 0x01]));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk("IHDR", ihdr),
    flood,
    idat,
    pngChunk("IEND", new Uint8Array(0)),
  ]);
}

/** SOI, `count` empty COM segments, EOI (refused whatever the walker thinks of the missing frame). */
function jpegComFlood(count: number): Buffer {
  const out = Buffer.alloc(2 + count * 4 + 2);
  out[0] = 0xff;
  out[1] = 0xd8;
  for (let i = 0; i < count; i++) out.set([0xff, 0xfe, 0x00, 0x02], 2 + i * 4);
  out[out.length - 2] = 0xff;
  out[out.length - 1] = 0xd9;
  return out;
}

const BOUNDARY = "attack-boundary-0123456789";
/** A multipart body of `count` one-byte text fields named `f<i>` (a `video` file part first when given). */
function multipartFlood(count: number, video?: Buffer): Buffer {
  const pieces: Buffer[] = [];
  if (video)
    pieces.push(
      Buffer.from(
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="video"; filename="a.mp4"\r\nContent-Type: video/mp4\r\n\r\n`,
      ),
      video,
      Buffer.from("\r\n"),
    );
  const field = (i: number) => `--${BOUNDARY}\r\nContent-Disposition: form-data; name="f${i}"\r\n\r\nx\r\n`;
  let text = "";
  for (let i = 0; i < count; i++) text += field(i);
  pieces.push(Buffer.from(`${text}--${BOUNDARY}--\r\n`));
  return Buffer.concat(pieces);
}

/** `{"pad":[0,0,...]}` of about `bytes` bytes: millions of values to build, within the body cap. */
function bigJson(bytes: number): Buffer {
  const n = Math.floor((bytes - 20) / 2);
  const out = Buffer.alloc(8 + n * 2 + 1);
  out.write('{"pad":[', 0, "latin1");
  for (let i = 0; i < n; i++) out.write(i === n - 1 ? "0]" : "0,", 8 + i * 2, "latin1");
  out.write("}", 8 + n * 2, "latin1");
  return out;
}

// --- requests ------------------------------------------------------------------------------------------------

const { t, server } = attackSuite("bounded parsers under attack");

const post = (key: string, path: string, body: Buffer | string, type: string, signal?: AbortSignal) =>
  partnerPost(server(), key, path, body, type, signal);

const multipartType = `multipart/form-data; boundary=${BOUNDARY}`;

/** The attack on a partner of its own; asserts nothing was charged. */
async function uncharged(name: string, attack: (key: string, signal: AbortSignal) => Promise<Response>): Promise<void> {
  await unchargedAttack(server(), name, attack);
}

/** A chunked upload session of `file`, its parts sent, then finalize's answer. */
async function chunked(key: string, file: Buffer, signal: AbortSignal): Promise<Response> {
  const init = await post(
    key,
    "/captions/uploads/init",
    JSON.stringify({ filename: "flood.mp4", size_bytes: file.length }),
    "application/json",
    signal,
  );
  const session = (await init.json()) as { session_id?: string };
  if (init.status !== 202 || !session.session_id) return new Response(JSON.stringify(session), { status: init.status });
  for (let i = 0, at = 0; at < file.length; i++, at += CHUNK) {
    const res = await post(
      key,
      `/captions/uploads/${session.session_id}/part/${i}`,
      file.subarray(at, at + CHUNK),
      "application/octet-stream",
      signal,
    );
    await res.arrayBuffer();
    if (res.status !== 200) return new Response(JSON.stringify({ part: i }), { status: res.status });
  }
  return post(key, `/captions/uploads/${session.session_id}/finalize`, "{}", "application/json", signal);
}

const moofs = moofFlood(FLOOD_BYTES);
const moovs = moovFlood(FLOOD_BYTES);
const moofForm = multipartFlood(0, moofs);
const moovForm = multipartFlood(0, moovs);

t("captions: single upload of 30 MB of 8-byte moof boxes", async () => {
  await uncharged("captions moof flood (single, 30 MB)", (key, signal) =>
    post(key, "/captions/upload", moofForm, multipartType, signal),
  );
});

t("captions: chunked upload of 30 MB of 8-byte moof boxes", async () => {
  await uncharged("captions moof flood (chunked, 30 MB)", (key, signal) => chunked(key, moofs, signal));
});

t("captions: a 30 MB moov of 8-byte children (single upload and chunked)", async () => {
  await uncharged("captions moov flood (single, 30 MB)", (key, signal) =>
    post(key, "/captions/upload", moovForm, multipartType, signal),
  );
  await uncharged("captions moov flood (chunked, 30 MB)", (key, signal) => chunked(key, moovs, signal));
});

t("remove-metadata: a PNG of 1.6 M empty tEXt chunks", async () => {
  const body = JSON.stringify({ image_base64: pngTextFlood(1_600_000).toString("base64") });
  await uncharged("metadata PNG tEXt flood (19 MB)", (key, signal) =>
    post(key, "/remove-metadata", body, "application/json", signal),
  );
});

t("remove-metadata: a JPEG of 4.9 M COM segments", async () => {
  const body = JSON.stringify({ image_base64: jpegComFlood(4_900_000).toString("base64") });
  await uncharged("metadata JPEG COM flood (19.6 MB)", (key, signal) =>
    post(key, "/remove-metadata", body, "application/json", signal),
  );
});

t("multipart: 65 parts, and a flood of 300,000", async () => {
  const parts65 = multipartFlood(65);
  await uncharged("multipart 65 parts", (key, signal) => post(key, "/captions/upload", parts65, multipartType, signal));
  const flood = multipartFlood(300_000);
  await uncharged(`multipart 300,000 parts (${(flood.length / MB).toFixed(0)} MB)`, (key, signal) =>
    post(key, "/captions/upload", flood, multipartType, signal),
  );
});

t("a 27 MB JSON body of 13 M numbers", async () => {
  const body = bigJson(27 * MB);
  await uncharged("JSON body 27 MB (13 M values)", (key, signal) =>
    post(key, "/remove-metadata", body, "application/json", signal),
  );
});

t.run();
