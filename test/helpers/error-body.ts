// Error bodies carry the request's `request_id` after the spec's fields (docs/api-choices.md "HTTP manners"), a new id on
// every call. Tests compare the spec's part exactly: this checks the id is there, is the one X-Request-Id
// names, and hands back the rest.
import * as assert from "uvu/assert";

export function errorBody(res: { body: any; headers: Headers }): Record<string, unknown> {
  const { request_id, ...rest } = res.body as Record<string, unknown>;
  assert.type(request_id, "string", "an error body names its request_id");
  assert.match(request_id as string, /^req_[0-9a-f]{24}$/);
  const header = res.headers.get("x-request-id");
  if (header?.startsWith("req_")) assert.is(request_id, header, "the body's request_id is the X-Request-Id");
  return rest;
}
