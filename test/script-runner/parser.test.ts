// The Script Runner's script parser (plugins/script-runner/parser.ts) on the spec's format and its edge cases:
// scenes, dialogue attached to its scene, the CHARACTER block, the reserved first line (first line only, no
// space before the colon, comma-separated, trimmed, duplicates collapsed case-insensitively, ids kept), the
// 20-scene cap and the invalid scripts.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { MAX_SCENES, parseScript, reservedNames, stripReservedLine } from "../../plugins/script-runner/parser.ts";

const t = suite("script parser");

const ok = (prompt: string) => {
  const r = parseScript(prompt);
  if (!r.ok) throw new Error(`expected a script, got ${r.reason}`);
  return r.script;
};

t("scenes, dialogues by number, the character block", () => {
  const s = ok(`Notes before any heading are ignored.
=== CHARACTER ===
A tall sailor with a red scarf.
=== SCENE: Harbour at dawn ===
Fog over the water, gulls.
=== DIALOGUE 1 ===
We leave at first light.
=== SCENE: Open sea ===
Waves, a small boat.
=== DIALOGUE 2 ===
Hold on!
=== DIALOGUE 2 ===
Almost there.`);
  assert.is(s.character, "A tall sailor with a red scarf.");
  assert.equal(s.scenes, [
    {
      name: "Harbour at dawn",
      setting: "Fog over the water, gulls.",
      dialogue: "We leave at first light.",
      characters: [],
    },
    { name: "Open sea", setting: "Waves, a small boat.", dialogue: "Hold on!\n\nAlmost there.", characters: [] },
  ]);
});

t("the reserved first line is stripped and read; elsewhere, or with a space before the colon, it is text", () => {
  const s = ok(`=== SCENE: One ===
character: Mia, tom , , MIA, svc-0a1b2c3d
Mia walks in.
=== SCENE: Two ===
Tom waits.
CHARACTER: Mia
=== SCENE: Three ===
CHARACTER : Tom
Rain.
=== DIALOGUE 1 ===
Hi.`);
  assert.equal(s.scenes[0], {
    name: "One",
    setting: "Mia walks in.",
    dialogue: "Hi.",
    characters: ["Mia", "tom", "svc-0a1b2c3d"],
  });
  assert.is(s.scenes[1]!.setting, "Tom waits.\nCHARACTER: Mia");
  assert.equal(s.scenes[1]!.characters, []);
  assert.is(s.scenes[2]!.setting, "CHARACTER : Tom\nRain.");
  // The first non-blank line counts; indentation does not make it another line.
  assert.equal(stripReservedLine("\n   CHARACTER: Ada\nText"), { text: "Text", characters: ["Ada"] });
  assert.equal(reservedNames(" a, A ,b,,  c "), ["a", "b", "c"]);
});

t("invalid scripts: no scenes, no dialogue, too many scenes, a dialogue of no scene", () => {
  assert.equal(parseScript("just text"), { ok: false, reason: "no_scenes" });
  assert.equal(parseScript("=== SCENE: A ===\ntext"), { ok: false, reason: "no_dialogue" });
  const many = `${Array.from({ length: MAX_SCENES + 1 }, (_, i) => `=== SCENE: S${i} ===\nx`).join("\n")}\n=== DIALOGUE 1 ===\nhi`;
  assert.equal(parseScript(many), { ok: false, reason: "too_many_scenes" });
  const twenty = `${Array.from({ length: MAX_SCENES }, (_, i) => `=== SCENE: S${i} ===\nx`).join("\n")}\n=== DIALOGUE 20 ===\nhi`;
  assert.is(ok(twenty).scenes.length, 20);
  assert.equal(parseScript("=== SCENE: A ===\nx\n=== DIALOGUE 2 ===\nhi"), {
    ok: false,
    reason: "bad_dialogue",
    detail: "2",
  });
  assert.equal(parseScript("=== SCENE: A ===\nx\n=== DIALOGUE ===\nhi"), {
    ok: false,
    reason: "bad_dialogue",
    detail: "",
  });
});

t("headings in any case and spacing, CRLF line ends, other === lines are text", () => {
  const s = ok("===  scene:  Dawn  ===\r\n=== NOTES ===\r\nquiet\r\n=== Dialogue 1 ===\r\nMorning.");
  assert.equal(s.scenes, [{ name: "Dawn", setting: "=== NOTES ===\nquiet", dialogue: "Morning.", characters: [] }]);
  assert.is(s.character, null);
});

t.run();
