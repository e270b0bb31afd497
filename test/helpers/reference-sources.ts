// The reference sources of the video and Omni reference tests, served over HTTP from this machine: a 3 s
// clip; the same with its frames zeroed (every box whole: it probes as 3 s, it does not decode); the same cut
// short after its moov (it probes as 3 s too, but is refused on its boxes). Plus what those tests read around
// a held encode: the job count, a job's ledger amounts, the wait for a held output.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mp4Boxes } from "../../lib/formats/index.ts";
import { createMediaEngine, generateTestVideo } from "../../lib/media/index.ts";
import type { TestKernel } from "../../testkit/index.ts";
import { ENGINE_MODES } from "../media/util.ts";

async function referenceFixtures() {
  const engine = createMediaEngine({ mode: ENGINE_MODES[0]! });
  const clip = await generateTestVideo(engine, { width: 320, height: 240, seconds: 3, font: false });
  const faststart = (
    await engine.run(["-i", "in.mp4", "-c", "copy", "-movflags", "+faststart", "fs.mp4"], {
      inputs: { "in.mp4": clip },
      outputs: ["fs.mp4"],
    })
  )["fs.mp4"]!;
  await engine.close();
  const mdatOf = (bytes: Uint8Array) => [...mp4Boxes(bytes)].find((b) => b.type === "mdat")!;
  const zeroed = new Uint8Array(clip);
  zeroed.fill(0, mdatOf(clip).body, mdatOf(clip).end);
  return { clip, zeroed, cutShort: faststart.subarray(0, mdatOf(faststart).start + 64) };
}

/**
 * Serves /clip.mp4, /zeroed.mp4 and /cut-short.mp4 (and the `extra` paths as text/plain); anything else is a
 * 404. Returns the base URL and the close for the teardown.
 */
export async function serveReferenceSources(extra: Record<string, string> = {}) {
  const fixtures = await referenceFixtures();
  const videos: Record<string, Uint8Array> = {
    "/clip.mp4": fixtures.clip,
    "/zeroed.mp4": fixtures.zeroed,
    "/cut-short.mp4": fixtures.cutShort,
  };
  const server: Server = createServer((req, res) => {
    const url = req.url ?? "";
    if (videos[url]) return void res.writeHead(200, { "content-type": "video/mp4" }).end(videos[url]);
    if (extra[url] !== undefined) return void res.writeHead(200, { "content-type": "text/plain" }).end(extra[url]);
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const close = async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  };
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close };
}

/** Rows in `jobs`: a call refused before the charge leaves it unchanged. */
export async function jobCount(tk: TestKernel) {
  const row = await tk.kernel.database.kysely
    .selectFrom("jobs")
    .select((eb) => eb.fn.countAll().as("n"))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The ledger amounts of one partner's job, in order (a charge then its refund, once each). */
export async function jobLedgerAmounts(tk: TestKernel, partnerId: string, jobId: string) {
  const ledger = await tk.kernel.database.kysely
    .selectFrom("ledger")
    .select(["amount"])
    .where("partner_id", "=", partnerId)
    .where("job_id", "=", jobId)
    .orderBy("id")
    .execute();
  return ledger.map((e) => Number(e.amount));
}

/** Waits (a poll with a deadline, no sleep) until a held encode writes `output`. */
export async function untilHeldOutput(held: string[][], output: string, ms = 60_000) {
  const until = Date.now() + ms;
  while (!held.some((outputs) => outputs.includes(output))) {
    if (Date.now() > until) throw new Error(`no held encode of ${output}: ${JSON.stringify(held)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
