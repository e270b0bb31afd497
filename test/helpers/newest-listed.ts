// The newest record of a partner's list (GET /images, /voiceovers, ...) as the end-to-end tests check it: the
// list's total, the fields the test knows, and the spec's created_at format ("YYYY-MM-DD HH:MM:SS", UTC).
import * as assert from "uvu/assert";
import type { TestKernel } from "../../testkit/index.ts";

/** The spec's timestamp format in lists. */
export const LISTED_AT = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;

/**
 * GETs `path` as the partner; asserts the list's `total`, each `expected` field of its first item (under
 * `items`) and the item's created_at format; returns the item.
 */
export async function newestListed(
  tk: TestKernel,
  key: string,
  path: string,
  items: string,
  total: number,
  expected: Record<string, unknown>,
): Promise<any> {
  const list = await tk.request("GET", path, { key });
  assert.is(list.body.total, total);
  const rec = list.body[items][0];
  for (const [field, value] of Object.entries(expected)) assert.is(rec[field], value, field);
  assert.match(rec.created_at, LISTED_AT);
  return rec;
}
