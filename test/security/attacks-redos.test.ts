// Issue 45, "No catastrophic regex", against a real server (test/security/under-attack.ts): the Script
// Runner's scene heading pattern backtracked cubically, so a 2 KB prompt held the event loop 8.8 s (5,000
// spaces: 113 s), before any charge, at 5 requests a minute per key. Each attack must be answered 400 with
// the Script Runner's text and take no credits while /healthz keeps answering; the worst /healthz answer and
// the peak RSS of each are printed at the end (measurements, not assertions).
//
// - a heading line of 2,000 and of 5,000 spaces (the requests);
// - a heading line as long as the prompt cap allows (the scan is linear: the largest legal input is cheap);
// - a valid script one character over the prompt cap (refused before it is parsed).
import * as assert from "uvu/assert";
import { RUNNER_ERRORS as E } from "../../plugins/script-runner/errors.ts";
import { LIMITS } from "../../plugins/script-runner/limits.ts";
import { attackSuite, partnerPost, unchargedAttack } from "./under-attack.ts";

// --- payloads, built once ------------------------------------------------------------------------------------

const heading = (spaces: number) => `===scene:${" ".repeat(spaces)}x\n=== DIALOGUE 1 ===\nhi`;
const TAIL = "x\n=== DIALOGUE 1 ===\nhi".length;
const script = "=== SCENE: Harbour ===\nFog.\n=== DIALOGUE 1 ===\nWe leave at dawn.\n";
const body = (prompt: string) => JSON.stringify({ prompt, character_image_base64: "AAAA" });

const attacks: Array<{ name: string; body: string; error: string }> = [
  { name: "script heading, 2,000 spaces", body: body(heading(2_000)), error: E.noScenes },
  { name: "script heading, 5,000 spaces", body: body(heading(5_000)), error: E.noScenes },
  {
    name: `script heading at the cap (${LIMITS.promptChars} chars)`,
    body: body(heading(LIMITS.promptChars - "===scene:".length - TAIL)),
    error: E.noScenes,
  },
  {
    name: "script one character over the cap",
    body: body(script + " ".repeat(LIMITS.promptChars + 1 - script.length)),
    error: E.promptTooLong,
  },
];

// --- requests ------------------------------------------------------------------------------------------------

const { t, server } = attackSuite("catastrophic regex under attack");

for (const attack of attacks) {
  // A partner per attack (unchargedAttack): the endpoint allows 5 submissions a minute per key.
  t(attack.name, async () => {
    const outcome = await unchargedAttack(server(), attack.name, (key, signal) =>
      partnerPost(server(), key, "/script-runner", attack.body, "application/json", signal),
    );
    assert.is(outcome.status, "400", `${attack.name}: ${outcome.note}`);
    assert.is(outcome.note, attack.error.slice(0, 100));
  });
}

t.run();
