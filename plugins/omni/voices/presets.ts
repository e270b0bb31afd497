// The 30 voice presets of spec part 3 ("Voice presets"), in one table: id, gender and traits as the spec lists
// them, and the eSpeak NG voice the sandbox speaks them with. Gender picks a female or male variant (neutral a
// Klatt one), the pitch words of the traits set eSpeak's pitch (high 75 ... low 28), the adjective its pace,
// and every preset gets its own variant/pitch/speed triple, so no two presets sound alike.
import type { EspeakVoice } from "mediagate/plugin";

export interface VoicePreset {
  id: string;
  /** The display name (`base_voice_name`): the id capitalized. */
  name: string;
  gender: "female" | "male" | "neutral";
  traits: string;
  espeak: EspeakVoice;
}

const PITCH: Record<string, number> = {
  high: 75,
  "mid-high": 63,
  younger: 66,
  mid: 52,
  "mid-low": 40,
  lower: 33,
  low: 28,
};
const PACE: Record<string, number> = {
  Excitable: 200,
  Upbeat: 190,
  Lively: 190,
  Bright: 180,
  Youthful: 180,
  Breezy: 175,
  Forward: 175,
  Friendly: 172,
  Casual: 170,
  Clear: 165,
  Firm: 160,
  Informative: 160,
  Even: 160,
  Knowledgeable: 158,
  Smooth: 158,
  Warm: 155,
  "Easy-going": 155,
  Gentle: 150,
  Soft: 150,
  Mature: 148,
  Breathy: 150,
  Gravelly: 145,
};

// [id, gender, traits, eSpeak variant, pitch nudge]: the nudge separates presets sharing variant and traits.
const ROWS: ReadonlyArray<readonly [string, VoicePreset["gender"], string, string, number]> = [
  ["achernar", "female", "Soft, high pitch", "f1", 0],
  ["aoede", "female", "Breezy, mid pitch", "f2", 0],
  ["autonoe", "female", "Bright, mid pitch", "f3", 0],
  ["callirrhoe", "female", "Easy-going, mid pitch", "f4", 0],
  ["despina", "female", "Smooth, mid pitch", "f5", 0],
  ["erinome", "female", "Clear, mid pitch", "Annie", 0],
  ["gacrux", "female", "Mature, mid pitch", "linda", -6],
  ["kore", "female", "Firm, mid pitch", "belinda", 0],
  ["laomedeia", "female", "Upbeat, mid-high pitch", "f3", 4],
  ["leda", "female", "Youthful, mid-high pitch", "f1", 6],
  ["sulafat", "female", "Warm, mid pitch", "aunty", 0],
  ["vindemiatrix", "female", "Gentle, mid pitch", "f2", -4],
  ["zephyr", "female", "Bright, mid-high pitch", "f5", 2],
  ["achird", "male", "Friendly, mid pitch", "m1", 0],
  ["algenib", "male", "Gravelly, low pitch", "m4", 0],
  ["algieba", "male", "Smooth, mid-low pitch", "m2", 0],
  ["alnilam", "male", "Firm, mid-low pitch", "m3", 0],
  ["charon", "male", "Informative, lower pitch", "m5", 0],
  ["enceladus", "male", "Breathy, lower pitch", "m6", -2],
  ["fenrir", "male", "Excitable, younger pitch", "m7", 0],
  ["iapetus", "male", "Clear, mid-low pitch", "m8", 0],
  ["orus", "male", "Firm, mid-low pitch", "Andy", 3],
  ["puck", "male", "Upbeat, mid pitch", "Mike", 0],
  ["rasalgethi", "male", "Informative, mid pitch", "edward", 0],
  ["sadachbia", "male", "Lively, low pitch", "john", 0],
  ["sadaltager", "male", "Knowledgeable, mid pitch", "david", 0],
  ["schedar", "male", "Even, mid-low pitch", "adam", -3],
  ["umbriel", "male", "Easy-going, lower pitch", "benjamin", 0],
  ["zubenelgenubi", "male", "Casual, mid-low pitch", "caleb", 2],
  ["pulcherrima", "neutral", "Forward, mid-high pitch", "klatt2", 0],
];

function espeakVoice(traits: string, variant: string, nudge: number): EspeakVoice {
  const [adjective, pitchWords] = traits.split(", ") as [string, string];
  const pitch = PITCH[pitchWords.replace(/ pitch$/, "")];
  const speed = PACE[adjective];
  if (pitch === undefined || speed === undefined) throw new Error(`preset traits "${traits}" have no eSpeak mapping`);
  return { voice: `en-us+${variant}`, pitch: Math.max(0, Math.min(99, pitch + nudge)), speed, gap: 0 };
}

export const VOICE_PRESETS: readonly VoicePreset[] = ROWS.map(([id, gender, traits, variant, nudge]) => ({
  id,
  name: id[0]!.toUpperCase() + id.slice(1),
  gender,
  traits,
  espeak: espeakVoice(traits, variant, nudge),
}));

const BY_ID = new Map(VOICE_PRESETS.map((p) => [p.id, p]));

/** The preset of an id (own entries only: "toString" is not a preset). */
export const presetById = (id: string): VoicePreset | undefined => BY_ID.get(id);
