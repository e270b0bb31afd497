// The spoken part of one synthesized word (16 kHz samples, sphinx-wav.ts's rate): what the tests that build
// speech with known word times put into their audio, and where in it the word starts and ends.
import { SPHINX_RATE } from "../../../plugins/captions/transcribe/sphinx-wav.ts";

/**
 * The samples from 20 ms before the first loud one (|x| >= 300) to 20 ms after the last; `start` and `end`
 * are where the loud part begins and ends (end exclusive), counted in samples from the start of `samples`.
 */
export function spokenPart(x: Int16Array): { samples: Int16Array; start: number; end: number } {
  let a = 0;
  let b = x.length - 1;
  while (a < x.length && Math.abs(x[a]!) < 300) a++;
  while (b > a && Math.abs(x[b]!) < 300) b--;
  const pad = Math.round(0.02 * SPHINX_RATE);
  const from = Math.max(0, a - pad);
  const to = Math.min(x.length, b + 1 + pad);
  return { samples: x.subarray(from, to), start: a - from, end: b + 1 - from };
}
