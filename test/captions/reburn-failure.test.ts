// A caption re-burn that fails (issue 36 item 10, spec part 2 "Caption jobs": "pending (re-burn) | re-burn
// fails | complete | previous output restored; no refund"), on every database backend: an uploaded clip with
// an embedded subtitle track is captioned (no recognizer needed: the timed-text provider answers), then
// edited twice with the stored source broken, once unreadable (the burn fails) and once gone: each time the
// job comes back `complete` with the same captioned_url serving the same bytes, its chunks and edit_count as
// before the edit, the caption charge kept (nothing refunded, no ledger line) and the balance unchanged.

import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Kysely } from "kysely";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { detectNativeFfmpeg } from "../../lib/media/index.ts";
import captions from "../../plugins/captions/index.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { createHttpApp } from "../../transports/http.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { H264_AAC, VIDEO_SOUND_SUBS } from "../helpers/ffmpeg-args.ts";

const SRT = "1\n00:00:00,200 --> 00:00:01,400\nHello there friends\n\n2\n00:00:01,600 --> 00:00:02,800\nSee you soon\n";
const LIMITS = {
  rate_limits: Object.fromEntries(
    [
      "POST /captions/upload",
      "GET /captions/<job_id>",
      "GET /captions/<job_id>/chunks",
      "POST /captions/<job_id>/edit",
    ].map((r) => [r, 100_000]),
  ),
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A 3 s 160x120 H.264 clip with a tone and a mov_text subtitle track, made with the ffmpeg program directly
 * (the media engine opens media containers only: an .srt input is refused by its first bytes, by design).
 */
function subtitledClip(): Uint8Array {
  const ffmpeg = detectNativeFfmpeg()?.ffmpegPath;
  if (!ffmpeg) throw new Error("these tests need the ffmpeg program");
  const dir = mkdtempSync(join(tmpdir(), "mediagate-reburn-"));
  try {
    writeFileSync(join(dir, "subs.srt"), SRT);
    execFileSync(
      ffmpeg,
      [
        "-v",
        "error",
        "-y",
        "-f",
        "lavfi",
        "-i",
        "testsrc=size=160x120:rate=10:duration=3",
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=440:duration=3",
        "-i",
        "subs.srt",
        ...VIDEO_SOUND_SUBS,
        ...H264_AAC,
        "out.mp4",
      ],
      { cwd: dir },
    );
    return new Uint8Array(readFileSync(join(dir, "out.mp4")));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const clip = subtitledClip();

for (const backend of await databaseBackends()) {
  const t = suite(`a failed caption re-burn on ${backend.name}`);
  let tk: TestKernel;
  t.before(async () => {
    tk = await createTestKernel({
      plugins: [captions],
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
      // Uploads need a recognizer (uploads/operations.ts); the upstream is configured but never called: the clip's own
      // subtitle track answers first.
      env: { PUBLIC_URL: "https://media.example.test", CAPTIONS_TRANSCRIBE_URL: "https://transcribe.example.test" },
      start: true,
    });
  });
  t.after(async () => tk.close());

  const until = async (read: () => Promise<{ body: any }>, done: (b: any) => boolean, what: string) => {
    const end = Date.now() + 180_000;
    for (;;) {
      const { body } = await read();
      if (done(body)) return body;
      if (Date.now() > end) throw new Error(`${what}: ${JSON.stringify(body)}`);
      await sleep(100);
    }
  };

  t("the old output is still served, the chunks and edit_count are unchanged, and nothing is refunded", async () => {
    const p = await tk.partner({ credits: 1000, tier: "standard", limits: LIMITS });
    const app = createHttpApp(tk.kernel, { adminToken: tk.adminToken });
    const form = new FormData();
    form.set("video", new Blob([clip as Uint8Array<ArrayBuffer>], { type: "video/mp4" }), "clip.mp4");
    const res = await app.fetch(
      new Request("http://mediagate.test/api/v1/partner/captions/upload", {
        method: "POST",
        headers: { authorization: `Bearer ${p.key}`, "user-agent": "t/1" },
        body: form,
      }),
    );
    const sub = (await res.json()) as any;
    assert.is(res.status, 202, JSON.stringify(sub));
    const id = sub.job_id as string;
    const poll = () => tk.request("GET", `/captions/${id}`, { key: p.key });
    const first = await until(poll, (b) => !["pending", "processing"].includes(b.status), "caption");
    assert.is(first.status, "complete", JSON.stringify(first));
    assert.equal([first.credits_used, first.credits_refunded, first.edit_count, first.editable], [25, false, 0, true]);
    const chunks = (await tk.request("GET", `/captions/${id}/chunks`, { key: p.key })).body.chunks;
    assert.equal(
      chunks.map((c: any) => c.text),
      ["Hello there friends", "See you soon"],
    );
    const outputKey = (url: string) =>
      `captions/${decodeURIComponent(new URL(url).pathname.slice("/media/captions/".length))}`;
    const output = await tk.kernel.blobs.get(outputKey(first.captioned_url));
    assert.ok(output && output.byteLength > 1000);

    const db = tk.kernel.database.kysely as Kysely<any>;
    const row = await db
      .selectFrom("captions_jobs")
      .select(["source_keys"])
      .where("job_id", "=", id)
      .executeTakeFirstOrThrow();
    const [sourceKey] = JSON.parse(row.source_keys) as string[];
    const ledger = async () =>
      (await db.selectFrom("ledger").select(["type", "amount"]).where("partner_id", "=", p.id).execute()).map(
        (l) => `${l.type} ${l.amount}`,
      );
    const ledgerBefore = await ledger();
    const balance = await tk.kernel.accounts.balance(p.id);
    assert.is(balance, 975);

    const breakages: Array<[string, () => Promise<unknown>]> = [
      // The probe is kept on the row, so the re-burn goes as far as the burn, which fails on these bytes.
      [
        "unreadable source",
        () => tk.kernel.blobs.put(`captions/${sourceKey}`, new Uint8Array(4096).fill(1), { contentType: "video/mp4" }),
      ],
      ["source gone", () => tk.kernel.blobs.remove(`captions/${sourceKey}`)],
    ];
    for (const [what, breakSource] of breakages) {
      await breakSource();
      const edit = await tk.request("POST", `/captions/${id}/edit`, {
        key: p.key,
        body: { chunks: [{ start: 0.2, end: 2.5, text: `EDITED ${what}` }] },
      });
      assert.is(edit.status, 202, `${what}: ${JSON.stringify(edit.body)}`);
      assert.is(edit.body.status, "pending", what);
      const after = await until(poll, (b) => !["pending", "processing"].includes(b.status), `re-burn (${what})`);
      assert.is(after.status, "complete", `${what}: ${JSON.stringify(after)}`);
      assert.is(after.captioned_url, first.captioned_url, `${what}: the previous output`);
      assert.equal(
        [after.edit_count, after.credits_used, after.credits_refunded, after.error],
        [0, 25, false, null],
        what,
      );
      assert.equal(
        await tk.kernel.blobs.get(outputKey(after.captioned_url)),
        output,
        `${what}: the same bytes are served`,
      );
      const kept = await tk.request("GET", `/captions/${id}/chunks`, { key: p.key });
      assert.equal(kept.body.chunks, chunks, `${what}: the chunks of the previous output`);
      assert.is(await tk.kernel.accounts.balance(p.id), balance, `${what}: no refund, no charge`);
      assert.equal(await ledger(), ledgerBefore, `${what}: no ledger line`);
    }
    // The re-burns ended failed, charged nothing, refunded nothing.
    const reburns = await db
      .selectFrom("jobs")
      .select(["state", "credits_used", "credits_refunded"])
      .where("partner_id", "=", p.id)
      .where("kind", "=", "reburn")
      .execute();
    assert.equal(
      reburns.map((j) => [j.state, Number(j.credits_used), Number(j.credits_refunded)]),
      [
        ["failed", 0, 0],
        ["failed", 0, 0],
      ],
    );
  });

  t.run();
}
