// The one mapping from the outbound guard's failures to the spec's API errors (lib/outbound/source.ts), and
// reading a source by URL: our own media URLs from storage, anything else through the guard.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ApiError } from "../../lib/api-error.ts";
import {
  OutboundError,
  type OutboundErrorKind,
  type OutboundGuard,
  outboundToApiError,
  type ReadSourceRules,
  readSource,
} from "../../lib/outbound/index.ts";
import type { ServiceMedia } from "../../lib/service-media.ts";

const fail = (kind: OutboundErrorKind, status?: number) =>
  new OutboundError(kind, `internal detail (${kind})`, status === undefined ? {} : { status });

function api(err: unknown): { status: number; message: string } | unknown {
  return err instanceof ApiError ? { status: err.status, message: err.message } : err;
}

const m = suite("outboundToApiError");

m("each kind gets its status and the caller's text; the internal message never shows", () => {
  const texts = { invalidUrl: "bad url", tooLarge: "too big", download: "could not download" };
  assert.equal(api(outboundToApiError(fail("invalid_url"), texts)), { status: 400, message: "bad url" });
  assert.equal(api(outboundToApiError(fail("not_public"), texts)), { status: 400, message: "bad url" });
  assert.equal(api(outboundToApiError(fail("too_large"), texts)), { status: 413, message: "too big" });
  for (const kind of ["http_status", "redirect", "timeout", "network"] as const) {
    assert.equal(api(outboundToApiError(fail(kind, 404), texts)), { status: 400, message: "could not download" }, kind);
  }
});

m("a download text that names a status gets the one a gateway would give", () => {
  const texts = { invalidUrl: "bad", tooLarge: "big", download: (s: number) => `answered ${s}` };
  const message = (err: OutboundError) => (outboundToApiError(err, texts) as ApiError).message;
  assert.is(message(fail("http_status", 403)), "answered 403");
  assert.is(message(fail("redirect", 302)), "answered 302");
  assert.is(message(fail("http_status")), "answered 502");
  assert.is(message(fail("timeout")), "answered 504");
  assert.is(message(fail("network")), "answered 502");
});

m("the request's own abort, foreign errors and kinds without a text pass through untouched", () => {
  const aborted = fail("aborted");
  assert.is(outboundToApiError(aborted, { invalidUrl: "x", tooLarge: "y", download: "z" }), aborted);
  const bug = new TypeError("boom");
  assert.is(outboundToApiError(bug, { invalidUrl: "x", tooLarge: "y", download: "z" }), bug);
  // A callback URL check maps only the refused URL; a DNS failure there is ours.
  const network = fail("network");
  assert.is(outboundToApiError(network, { invalidUrl: "callback_url must be a public https URL" }), network);
  const big = fail("too_large");
  assert.is(outboundToApiError(big, { invalidUrl: "x" }), big);
  assert.equal(api(outboundToApiError(fail("not_public"), { invalidUrl: "callback_url must be a public https URL" })), {
    status: 400,
    message: "callback_url must be a public https URL",
  });
});

m.run();

const r = suite("readSource");

const RULES: ReadSourceRules = {
  maxBytes: 4,
  timeoutMs: 1000,
  texts: { invalidUrl: "bad url", download: "could not download", tooLarge: "too big" },
};
const OURS = "https://media.example/media/images/a.png";

function deps(stored: Record<string, Uint8Array | null>, fetched: (url: string) => Promise<Uint8Array>) {
  const fetches: string[] = [];
  const guard = {
    checkUrl: (u: unknown) =>
      String(u).startsWith("https://")
        ? { ok: true, url: new URL(String(u)) }
        : { ok: false, kind: "invalid_url", reason: "scheme" },
    fetch: async (u: string | URL) => {
      fetches.push(String(u));
      return { status: 200, headers: {}, body: await fetched(String(u)), url: new URL(String(u)) };
    },
  } as unknown as OutboundGuard;
  const serviceMedia = {
    read: async (url: string): Promise<ServiceMedia> => {
      if (!(url in stored)) return { kind: "external" };
      const bytes = stored[url];
      return bytes ? { kind: "found", bytes, plugin: "images", key: "a.png" } : { kind: "missing" };
    },
  };
  return { guard, serviceMedia, fetches };
}

async function outcome(p: Promise<Uint8Array>): Promise<unknown> {
  try {
    return Array.from(await p);
  } catch (err) {
    return api(err);
  }
}

r("our own media URLs are read from storage, never fetched, under the same cap and texts", async () => {
  const d = deps({ [OURS]: new Uint8Array([1, 2, 3]) }, async () => new Uint8Array([9]));
  assert.equal(await outcome(readSource(OURS, RULES, d)), [1, 2, 3]);
  const big = deps({ [OURS]: new Uint8Array(5) }, async () => new Uint8Array([9]));
  assert.equal(await outcome(readSource(OURS, RULES, big)), { status: 413, message: "too big" });
  const gone = deps({ [OURS]: null }, async () => new Uint8Array([9]));
  assert.equal(await outcome(readSource(OURS, RULES, gone)), { status: 400, message: "could not download" });
  assert.equal(await outcome(readSource(OURS, { ...RULES, texts: { ...RULES.texts, notFound: "not found" } }, gone)), {
    status: 404,
    message: "not found",
  });
  assert.equal([...d.fetches, ...big.fetches, ...gone.fetches], []);
});

r("anything else goes through the guard, its failures mapped", async () => {
  const ok = deps({}, async () => new Uint8Array([7]));
  assert.equal(await outcome(readSource("https://cdn.example/x.png", RULES, ok)), [7]);
  assert.equal(ok.fetches, ["https://cdn.example/x.png"]);
  const refused = deps({}, async () => new Uint8Array([7]));
  assert.equal(await outcome(readSource("http://cdn.example/x.png", RULES, refused)), {
    status: 400,
    message: "bad url",
  });
  assert.equal(refused.fetches, [], "refused before any fetch");
  const dead = deps({}, async () => {
    throw fail("http_status", 404);
  });
  assert.equal(await outcome(readSource("https://cdn.example/x.png", RULES, dead)), {
    status: 400,
    message: "could not download",
  });
  const rebinding = deps({}, async () => {
    throw fail("not_public");
  });
  assert.equal(await outcome(readSource("https://cdn.example/x.png", RULES, rebinding)), {
    status: 400,
    message: "bad url",
  });
});

r.run();
