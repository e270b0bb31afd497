// No catastrophic regular expression (issue 45): every regular expression written in the source is checked
// by the ReDoS analyser `recheck` (test/security/regex-inventory.ts finds them with the TypeScript parser:
// regex literals, and `RegExp(...)` / `new RegExp(...)` with a literal pattern). The trigger was the Script
// Runner's scene heading pattern, which held the event loop 8.8 s on a 2 KB prompt.
//
// The rule:
// - "vulnerable" (recheck found super-linear backtracking, polynomial or exponential, and an attack string)
//   fails the test wherever the pattern is, listed with every file:line it appears at and recheck's attack.
//   Rewrite the pattern (or scan by hand, as plugins/script-runner/parser.ts does); there is no allow list.
// - "unknown" (recheck could not decide within PER_PATTERN_MS, or could not read the pattern) fails only when
//   the pattern is partner-facing. Partner-facing is every scanned file except cli/, testkit/ and main.ts
//   (those read the operator's own environment, command line or test data): statically we cannot tell what
//   text reaches a pattern, so anything the server runs counts as seeing partner input (ffmpeg's log lines
//   repeat partner file names and tags, upstream answers repeat partner prompts).
// - Patterns built from a non-literal string cannot be checked; they are printed, not failed.
//
// recheck runs offline: its native binary (optional dependency recheck-linux-x64), else a JVM, else its
// JavaScript build. Its time-based phases (seeding, incubation, attack) are switched off so that the verdict
// does not depend on how loaded the machine is (their step limits still bound them); only the overall
// per-pattern timeout is a clock, and hitting it gives "unknown". Each distinct pattern is checked once; a
// pattern without any repetition character (`*`, `+`, `?`, `{`, escaped or not) is not sent: at each start
// position it reads at most its own length, so its matching is linear whatever recheck would say.

import { check, type Diagnostics } from "recheck";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { type FoundRegex, findRegexes } from "./regex-inventory.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const ROOTS = ["core", "lib", "plugins", "transports", "storage", "contracts", "testkit", "cli", "main.ts"];
const NOT_PARTNER_FACING = ["cli/", "testkit/", "main.ts"];
const PER_PATTERN_MS = 10_000;
const PARAMS = { timeout: PER_PATTERN_MS, attackTimeout: null, incubationTimeout: null, seedingTimeout: null } as const;

const partnerFacing = (where: string) => !NOT_PARTNER_FACING.some((p) => where.startsWith(p));

const t = suite("redos: every regular expression in the source");

t("the analyser still recognises the pattern that froze the server", async () => {
  const old = await check("^\\s*===\\s*scene\\s*:\\s*(.*?)\\s*===\\s*$", "i", PARAMS);
  assert.is(old.status, "vulnerable");
});

t("no pattern is vulnerable; none partner-facing is undecided", async () => {
  const { found, dynamic, files } = findRegexes(ROOT, ROOTS);
  assert.ok(files > 100 && found.length > 100, `found only ${found.length} patterns in ${files} files`);
  const distinct = new Map<string, FoundRegex[]>();
  for (const f of found) {
    const key = `/${f.source}/${f.flags}`;
    distinct.set(key, [...(distinct.get(key) ?? []), f]);
  }

  const REPEATS = /[*+?{]/;
  const repeating = [...distinct].filter(([, places]) => REPEATS.test(places[0]!.source));

  const started = performance.now();
  const failures: string[] = [];
  const notes: string[] = [];
  let slowest = { ms: 0, key: "" };
  for (const [key, places] of repeating) {
    const t0 = performance.now();
    let d: Diagnostics;
    try {
      d = await check(places[0]!.source, places[0]!.flags, PARAMS);
    } catch (err) {
      d = {
        status: "unknown",
        source: places[0]!.source,
        flags: places[0]!.flags,
        checker: null,
        error: { kind: "unexpected", message: String(err) },
      } as unknown as Diagnostics;
    }
    const ms = performance.now() - t0;
    if (ms > slowest.ms) slowest = { ms, key };
    const at = places.map((p) => p.where).join(", ");
    if (d.status === "vulnerable") {
      failures.push(`vulnerable (${d.complexity.type}) ${key} at ${at}; attack ${d.attack.pattern}`);
    } else if (d.status === "unknown") {
      const why = `${d.error.kind}${"message" in d.error ? `: ${d.error.message}` : ""}`;
      if (places.some((p) => partnerFacing(p.where)))
        failures.push(`unknown (${why}), partner-facing: ${key} at ${at}`);
      else notes.push(`unknown (${why}), not partner-facing: ${key} at ${at}`);
    }
  }

  console.log(
    `  ${found.length} patterns (${distinct.size} distinct, ${repeating.length} with repetition) in ${files} files checked in ${((performance.now() - started) / 1000).toFixed(1)} s; slowest ${slowest.ms.toFixed(0)} ms ${slowest.key}`,
  );
  if (dynamic.length) console.log(`  built from non-literal strings, not checked: ${dynamic.join(", ")}`);
  for (const n of notes) console.log(`  ${n}`);
  assert.ok(failures.length === 0, `${failures.length} pattern(s) fail the ReDoS rule:\n${failures.join("\n")}`);
});

t.run();
