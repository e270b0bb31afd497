import * as assert from "uvu/assert";

/** Awaits a promise that must reject, and returns what it rejected with. */
export async function rejection(p: Promise<unknown>): Promise<any> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error("expected the promise to reject");
}

/**
 * Asserts an answer's status and that its body has exactly the named fields, no more and no fewer. `fields` is
 * one string of names separated by spaces, in any order, so a spec table reads as one line.
 */
export function assertAnswer(res: { status: number; body: any }, status: number, fields: string): void {
  assert.is(res.status, status, JSON.stringify(res.body));
  assert.equal(Object.keys(res.body ?? {}).sort(), fields.split(/\s+/).filter(Boolean).sort());
}

/** Asserts that an object has exactly the named fields (space-separated, any order). */
export function assertFields(body: unknown, fields: string): void {
  assert.equal(Object.keys(body ?? {}).sort(), fields.split(/\s+/).filter(Boolean).sort());
}
