// What ad analysis hands `text.generate` (task AD_ANALYSIS_TASK): the facts it measured on the downloaded ad,
// and the JSON object it expects back. Shared with the text plugin's sandbox writer, which builds every
// sentence from these facts alone; an upstream model gets them as its input with the same instructions.
import type { SocialPlatform } from "./social.ts";

export const AD_ANALYSIS_TASK = "ad-analysis";

/** A colour as measured: its hex value, the nearest plain name, and its share of the pixels (0-1). */
export interface MeasuredColour {
  hex: string;
  name: string;
  share: number;
}

/** One frame looked at: the first frame, or the first frame after a cut. */
export interface MeasuredFrame {
  /** Seconds from the start. */
  at: number;
  /** Mean lightness, 0 (black) to 100 (white). */
  brightness: number;
  colours: MeasuredColour[];
}

export interface AdFacts {
  platform: SocialPlatform;
  duration_seconds: number;
  width: number;
  height: number;
  /** `vertical`, `square` or `horizontal`. */
  orientation: "vertical" | "square" | "horizontal";
  has_audio: boolean;
  /** Every hard cut (scene change), in seconds from the start. */
  cut_times: number[];
  cuts: number;
  cuts_per_minute: number;
  /** Duration over the number of shots (cuts + 1). */
  average_shot_seconds: number;
  /** The frames measured: the first one and those after the first cuts (bounded). */
  frames: MeasuredFrame[];
  /** Over the measured frames, each frame weighted by the time its shot lasts. */
  dominant_colours: MeasuredColour[];
  average_brightness: number;
  /** EBU R128 over the whole ad; null without audio. */
  loudness: { integrated_lufs: number; true_peak_dbtp: number | null; range_lu: number | null } | null;
  transcript: {
    language: string;
    text: string;
    words: number;
    /** From the first word's start to the last word's end. */
    speech_seconds: number;
    words_per_minute: number | null;
    /** Each sentence (or run of words) with the second it starts at. */
    lines: Array<{ at: number; text: string }>;
  };
  /** The first 3 seconds: the words said, the picture shown, the cuts made. */
  hook: { seconds: number; said: string; shown: MeasuredFrame | null; cuts: number };
  /** The sentence of the transcript that asks the viewer to act, if there is one. */
  call_to_action: string | null;
}

/** The answer `text.generate` gives for AD_ANALYSIS_TASK: a JSON object with four non-empty strings. */
export interface AdAnalysisTexts {
  summary: string;
  transcription: string;
  analysis: string;
  ugc_script: string;
}

export const AD_ANALYSIS_FIELDS = [
  "summary",
  "transcription",
  "analysis",
  "ugc_script",
] as const satisfies ReadonlyArray<keyof AdAnalysisTexts>;
