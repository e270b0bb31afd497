// Shared by the format tests: bytes from text, and the rule every reader keeps on damaged input.
import * as assert from "uvu/assert";
import { isDamagedMedia } from "../../lib/formats/index.ts";

export const bytes = (...parts: Array<string | number[] | Uint8Array>): Uint8Array =>
  Uint8Array.from(parts.flatMap((p) => (typeof p === "string" ? [...p].map((c) => c.charCodeAt(0)) : [...p])));

/** Runs the reader to its end: it returns, or throws DamagedMediaError and nothing else. */
export function readsOrDamaged(read: () => unknown, what: string): "ok" | "damaged" {
  try {
    read();
    return "ok";
  } catch (err) {
    assert.ok(isDamagedMedia(err), `${what}: ${String(err)}`);
    return "damaged";
  }
}

export const throwsDamaged = (read: () => unknown, what: string) =>
  assert.is(readsOrDamaged(read, what), "damaged", what);
