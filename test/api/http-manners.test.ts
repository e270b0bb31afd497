// HTTP manners of the partner API (beyond the spec, non-breaking): X-Request-Id on every answer (the body's
// request_id, or the client's own id of a safe form echoed), WWW-Authenticate on a 401, and ETag with 304 on
// GET reads, the validator ignoring the per-call request_id so an unchanged read matches.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import account from "../../plugins/account/index.ts";

const t = suite("partner API HTTP manners");
let tk: TestKernel;
t.before(async () => {
  tk = await createTestKernel({ plugins: [account] });
});
t.after(async () => {
  await tk.close();
});

t("X-Request-Id: the body's request_id, or the client's safe id echoed; on errors too", async () => {
  const { key } = await tk.partner({ credits: 100 });
  const plain = await tk.request("GET", "/me", { key });
  assert.is(plain.status, 200);
  assert.match(plain.body.request_id, /^req_[0-9a-f]{24}$/);
  assert.is(plain.headers.get("x-request-id"), plain.body.request_id);
  const traced = await tk.request("GET", "/me", { key, headers: { "x-request-id": "trace-0123456789" } });
  assert.is(traced.headers.get("x-request-id"), "trace-0123456789");
  assert.match(traced.body.request_id, /^req_/, "request_id stays the server's trace id");
  for (const unsafe of ["short", "has space in it", "x".repeat(200), "semi;colon-value"]) {
    const r = await tk.request("GET", "/me", { key, headers: { "x-request-id": unsafe } });
    assert.is(r.headers.get("x-request-id"), r.body.request_id, unsafe);
  }
  const refused = await tk.request("GET", "/transactions?limit=abc", { key });
  assert.is(refused.status, 400);
  assert.match(refused.headers.get("x-request-id") ?? "", /^req_[0-9a-f]{24}$/);
});

t("a 401 carries WWW-Authenticate", async () => {
  const r = await tk.request("GET", "/me", { headers: { authorization: "Bearer svc_partner_nope" } });
  assert.is(r.status, 401);
  assert.is(r.headers.get("www-authenticate"), 'Bearer realm="partner API"');
  const none = await tk.request("GET", "/credits");
  assert.is(none.status, 401);
  assert.ok(none.headers.get("www-authenticate"));
});

t("GET reads: ETag, 304 while unchanged, a new ETag once the answer changes", async () => {
  const { id, key } = await tk.partner({ credits: 100 });
  const first = await tk.request("GET", "/credits", { key });
  const etag = first.headers.get("etag");
  assert.match(etag ?? "", /^W\/"[\w-]{27}"$/);
  const again = await tk.request("GET", "/credits", { key, headers: { "if-none-match": etag! } });
  assert.is(again.status, 304);
  assert.is(again.body, "");
  assert.is(again.headers.get("etag"), etag);
  assert.is((await tk.request("GET", "/credits", { key, headers: { "if-none-match": `W/"other", ${etag}` } })).status, 304);
  await tk.kernel.accounts.update(id, { limits: { inflight_jobs: 3 } });
  await tk.request("POST", `/api/v1/admin/partners/${id}/credits`, { headers: { authorization: `Bearer ${tk.adminToken}` }, body: { amount: 5, type: "purchase", description: "more" } });
  const changed = await tk.request("GET", "/credits", { key, headers: { "if-none-match": etag! } });
  assert.is(changed.status, 200);
  assert.is(changed.body.credits_remaining, 105);
  assert.is.not(changed.headers.get("etag"), etag);
  // Writes carry no validator.
  assert.is((await tk.request("POST", "/generate-image", { key, body: {} })).headers.get("etag"), null);
});

t.run();
