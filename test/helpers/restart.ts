// What the kill -9 tests share (test/*/restart.test.ts): JSON calls to a real server started by
// test/helpers/server.ts, with a partner key or the admin token, and polling until a condition holds.
import type { ServerProcess } from "./server.ts";

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A path of the partner API. */
export const api = (path: string) => `/api/v1/partner${path}`;

/** Calls over HTTP as a partner (`key`) or as the operator (`adminToken`); the body parsed when it is JSON. */
export async function call(server: ServerProcess, method: string, path: string, opts: { key?: string; adminToken?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = { "user-agent": "mediagate-restart-test/1.0" };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  if (opts.adminToken) headers.authorization = `Bearer ${opts.adminToken}`;
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  const send = () => fetch(server.url + path, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  let res: Response;
  try {
    res = await send();
  } catch (err) {
    // A GET on a pooled keep-alive socket the server was closing as it was reused fails with "fetch failed"
    // (seen on a loaded machine); a read is safe to send again. A server that is really gone fails twice.
    if (method !== "GET") throw err;
    await sleep(100);
    res = await send();
  }
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, body };
}

/** A `call` answer (or a list of them) refused by a rate limit. */
const limited = (v: unknown): boolean => (Array.isArray(v) ? v.some(limited) : typeof v === "object" && v !== null && (v as { status?: unknown }).status === 429);

/**
 * Reads until `done` holds; fails with `what` and the last value after `ms`. A 429 read is still "not yet" (a
 * test may poll a path whose limit it did not raise), but it is reported once on stderr, where the runner
 * shows it with the file's output.
 */
export async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, what: string, ms = 180_000, everyMs = 100): Promise<T> {
  const end = Date.now() + ms;
  let warned = false;
  for (;;) {
    const v = await read();
    if (!warned && limited(v)) {
      // Not "not yet": a rate limit, waited out in silence (up to its window, a minute), looked like a slow
      // recovery. Said once in the file's output; the test should raise its partner's limit for the path.
      warned = true;
      process.stderr.write(`until(${what.split("\n")[0]}): answered 429 (a rate limit; raise the test partner's limit for this path): ${JSON.stringify(v).slice(0, 300)}\n`);
    }
    if (done(v)) return v;
    if (Date.now() > end) throw new Error(`${what}: ${JSON.stringify(v)}`);
    await sleep(everyMs);
  }
}
