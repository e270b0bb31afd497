// Shared by the upscale tests: the kernel with every plugin the upscaler meets, a local file server for
// source URLs (reached with ALLOW_PRIVATE_URLS), polling, and the "nothing changed" probe of invariant 2.

import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import * as assert from "uvu/assert";
import account from "../../plugins/account/index.ts";
import images from "../../plugins/images/index.ts";
import imagesSandbox from "../../plugins/images/sandbox.ts";
import upscale from "../../plugins/upscale/index.ts";
import video from "../../plugins/video/index.ts";
import videoSandbox from "../../plugins/video/sandbox.ts";
import type { TestKernel } from "../../testkit/index.ts";
import { balance } from "../helpers/partner-reads.ts";
import { ended, notPending, pollStatus } from "../helpers/poll-status.ts";

export const PLUGINS = [account, imagesSandbox, images, videoSandbox, video, upscale];
export const PUBLIC_URL = "https://media.example.test";

// The spec's per-minute limits (10 and 5 submits, 60 polls) would stop these tests, not the code they test.
export const UNLIMITED = {
  rate_limits: {
    "POST /upscale-image": 10_000,
    "POST /upscale-video": 10_000,
    "GET /image-status/<gen_id>": 100_000,
    "GET /video-status/<job_id>": 100_000,
    "GET /images": 10_000,
    "GET /videos": 10_000,
    "GET /credits": 10_000,
    "POST /generate-image": 10_000,
  },
};

/** The kernel's options (for test/helpers/kernel-suite.ts): every plugin, the sandbox latency, private URLs. */
export const upscaleOptions = (options: { start?: boolean; privateUrls?: boolean } = {}) => ({
  plugins: PLUGINS,
  start: options.start ?? true,
  env: {
    SANDBOX_LATENCY_MS: "40",
    PUBLIC_URL,
    ...(options.privateUrls === false ? {} : { ALLOW_PRIVATE_URLS: "1" }),
  },
});

export const partner = (tk: TestKernel, o: Parameters<TestKernel["partner"]>[0] = {}) =>
  tk.partner({ ...o, limits: UNLIMITED });

export type Route = Uint8Array | ((req: IncomingMessage, res: ServerResponse) => void);

/** A local HTTP server; `base` is its http://127.0.0.1:port. */
export async function fileServer(routes: Record<string, Route>): Promise<{ base: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const route = routes[(req.url ?? "/").split("?")[0]!];
    if (route instanceof Uint8Array)
      return void res
        .writeHead(200, { "content-type": "application/octet-stream", "content-length": String(route.byteLength) })
        .end(route);
    if (route) return route(req, res);
    res.writeHead(404).end("not here");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** The /video-status answer once the upscale job has ended. */
export const videoEnd = async (tk: TestKernel, key: string, jobId: string) =>
  (await pollStatus(tk, key, `/video-status/${jobId}`, ended, 300_000, 50)).body;

/** The /image-status answer once the upscale is no longer pending (by generation or public id). */
export const imageEnd = async (tk: TestKernel, key: string, id: string | number) =>
  (await pollStatus(tk, key, `/image-status/${id}`, notPending, 120_000, 50)).body;

/** Overwrites the source an upscale job keeps (its input's source_key, under upscale/) with `bytes`. */
export async function replaceSource(tk: TestKernel, jobId: string, bytes: Uint8Array): Promise<void> {
  const row = await tk.kernel.database.kysely
    .selectFrom("jobs")
    .select("input")
    .where("id", "=", jobId)
    .executeTakeFirstOrThrow();
  await tk.kernel.blobs.put(`upscale/${(row.input as any).source_key}`, bytes);
}

export async function count(tk: TestKernel, table: string, partnerId?: string): Promise<number> {
  let q = tk.kernel.database.kysely.selectFrom(table as any).select((eb: any) => eb.fn.countAll().as("n"));
  if (partnerId) q = q.where("partner_id" as any, "=", partnerId);
  return Number(((await q.executeTakeFirstOrThrow()) as any).n);
}

/**
 * Invariant 2: a refused request leaves no job, no ledger row beyond the purchase, no kept file (`keptFiles`
 * are other partners' sources still waiting for their jobs).
 */
export async function assertNothingChanged(
  tk: TestKernel,
  partnerId: string,
  key: string,
  credits: number,
  what: string,
  keptFiles = 0,
) {
  assert.is(await count(tk, "jobs", partnerId), 0, `${what}: job rows`);
  assert.is(await count(tk, "ledger", partnerId), 1, `${what}: ledger rows`);
  assert.is(await count(tk, "retained_blobs"), keptFiles, `${what}: kept files`);
  assert.is(await balance(tk, key), credits, `${what}: balance`);
}
