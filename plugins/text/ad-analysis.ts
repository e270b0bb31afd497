// The sandbox writer of ad analysis (task AD_ANALYSIS_TASK): the four texts built from the measured facts
// (contracts/analysis.ts AdFacts) and nothing else. Every sentence states a figure that was measured, or a
// judgement made by a fixed rule on one (the thresholds below, each named), so a reader can check each one
// against the media. An input that is not the facts object is a TextGenerationError (the caller's failure).
import type { AdAnalysisTexts, AdFacts, MeasuredColour } from "mediagate/plugin";
import { TextGenerationError } from "mediagate/plugin";

/** The rules the judgements follow. */
export const AD_RULES = {
  /** Average shot length below which the edit reads as fast, above which as slow (seconds). */
  fastShotSeconds: 2,
  slowShotSeconds: 5,
  /** Speaking rate bands (words per minute). */
  briskWpm: 165,
  slowWpm: 120,
  /** The loudness many platforms normalize to (LUFS), and the true peak a master should stay under (dBTP). */
  platformLufs: -14,
  peakCeilingDbtp: -1,
  /** Average lightness (0-100) below which the picture reads as dark, above which as bright. */
  darkBrightness: 35,
  brightBrightness: 70,
} as const;

const s1 = (n: number) => (Math.round(n * 10) / 10).toString();
const pct = (share: number) => `${Math.round(share * 100)}%`;
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** 83.4 -> "1:23.4"; whole seconds without decimals: "0:03". */
export function clock(seconds: number, decimals = 0): string {
  const m = Math.floor(seconds / 60);
  const rest = seconds - m * 60;
  const text = decimals
    ? rest.toFixed(decimals).padStart(decimals + 3, "0")
    : String(Math.floor(rest)).padStart(2, "0");
  return `${m}:${text}`;
}

function colourList(colours: readonly MeasuredColour[]): string {
  const parts = colours.map((c) => `${c.name} (#${c.hex}, ${pct(c.share)})`);
  return parts.length <= 1 ? (parts[0] ?? "no single colour") : `${parts.slice(0, -1).join(", ")} and ${parts.at(-1)}`;
}

function brightnessWord(b: number): string {
  return b < AD_RULES.darkBrightness ? "dark" : b > AD_RULES.brightBrightness ? "bright" : "mid-toned";
}

function isFacts(value: unknown): value is AdFacts {
  const f = value as AdFacts;
  return (
    typeof f === "object" &&
    f !== null &&
    typeof f.duration_seconds === "number" &&
    Array.isArray(f.cut_times) &&
    Array.isArray(f.frames) &&
    typeof f.transcript === "object" &&
    f.transcript !== null &&
    Array.isArray(f.transcript.lines) &&
    typeof f.hook === "object" &&
    f.hook !== null
  );
}

export function summary(f: AdFacts): string {
  const parts = [
    `A ${s1(f.duration_seconds)}-second ${f.orientation} ${f.platform} ad (${f.width}x${f.height}) with ${plural(f.cuts, "cut")}` +
      (f.cuts
        ? `, ${s1(f.cuts_per_minute)} a minute, one shot every ${s1(f.average_shot_seconds)} seconds on average.`
        : `: one continuous shot.`),
  ];
  if (f.transcript.words > 0) {
    const first = f.transcript.lines[0]?.text ?? f.transcript.text;
    parts.push(
      `It speaks ${plural(f.transcript.words, "word")} in ${s1(f.transcript.speech_seconds)} seconds` +
        (f.transcript.words_per_minute !== null ? ` (${f.transcript.words_per_minute} words per minute)` : "") +
        `, opening with "${first}"`,
    );
    parts[parts.length - 1] += f.call_to_action
      ? ` and closing on the call to action "${f.call_to_action}"`
      : ", with no spoken call to action";
    if (!/[.!?]"$/.test(parts[parts.length - 1]!)) parts[parts.length - 1] += ".";
  } else {
    parts.push(f.has_audio ? "No speech was heard in its sound." : "It has no sound.");
  }
  parts.push(
    `Its picture is mostly ${colourList(f.dominant_colours)}, ${brightnessWord(f.average_brightness)} overall (average brightness ${s1(f.average_brightness)} of 100).`,
  );
  return parts.join(" ");
}

export function transcription(f: AdFacts): string {
  if (f.transcript.words === 0) return f.has_audio ? "(No speech detected.)" : "(The ad has no sound.)";
  return f.transcript.lines.map((l) => `[${clock(l.at, 1)}] ${l.text}`).join("\n");
}

export function analysis(f: AdFacts): string {
  const out: string[] = [];

  // The hook.
  const shown = f.hook.shown;
  const picture = shown
    ? `a ${brightnessWord(shown.brightness)} ${shown.colours[0]?.name ?? "mixed"} frame (brightness ${s1(shown.brightness)})`
    : "no frame";
  if (f.hook.said) {
    const question = /\?/.test(f.hook.said) ? " It opens on a question, inviting the viewer to answer it." : "";
    out.push(
      `Hook (first ${f.hook.seconds} seconds): "${f.hook.said}" is said over ${picture}, with ${plural(f.hook.cuts, "cut")} in those seconds.${question}`,
    );
  } else {
    out.push(
      `Hook (first ${f.hook.seconds} seconds): nothing is said; the ad opens on ${picture}, with ${plural(f.hook.cuts, "cut")} in those seconds, so the picture alone must stop the scroll.`,
    );
  }

  // Pacing.
  const pace =
    f.cuts === 0
      ? "a single shot"
      : f.average_shot_seconds < AD_RULES.fastShotSeconds
        ? "a fast edit"
        : f.average_shot_seconds > AD_RULES.slowShotSeconds
          ? "a slow edit"
          : "a moderate edit";
  out.push(
    f.cuts
      ? `Pacing: ${plural(f.cuts, "cut")} in ${s1(f.duration_seconds)} seconds (${s1(f.cuts_per_minute)} a minute, at ${f.cut_times.map((t) => `${s1(t)} s`).join(", ")}), ${pace}: shots last ${s1(f.average_shot_seconds)} seconds on average.`
      : `Pacing: ${pace} of ${s1(f.duration_seconds)} seconds, no cut.`,
  );

  // Voice.
  if (f.transcript.words_per_minute !== null) {
    const wpm = f.transcript.words_per_minute;
    const band = wpm > AD_RULES.briskWpm ? "brisk" : wpm < AD_RULES.slowWpm ? "slow" : "conversational";
    const share = f.duration_seconds > 0 ? f.transcript.speech_seconds / f.duration_seconds : 0;
    out.push(
      `Voice: ${wpm} words per minute, a ${band} pace; speech fills ${pct(Math.min(1, share))} of the ad (${s1(f.transcript.speech_seconds)} of ${s1(f.duration_seconds)} seconds).`,
    );
  } else if (f.transcript.words > 0) {
    out.push(`Voice: ${plural(f.transcript.words, "word")}, too short to give a speaking rate.`);
  } else {
    out.push(
      f.has_audio ? "Voice: no speech was heard; the sound carries no words." : "Voice: the ad has no sound track.",
    );
  }

  // Sound.
  if (f.loudness) {
    const diff = f.loudness.integrated_lufs - AD_RULES.platformLufs;
    const level =
      Math.abs(diff) < 1
        ? `at the ${AD_RULES.platformLufs} LUFS many platforms normalize to`
        : `${s1(Math.abs(diff))} LU ${diff < 0 ? "quieter" : "louder"} than the ${AD_RULES.platformLufs} LUFS many platforms normalize to`;
    let peak = "";
    if (f.loudness.true_peak_dbtp !== null)
      peak =
        f.loudness.true_peak_dbtp > AD_RULES.peakCeilingDbtp
          ? `; its true peak of ${s1(f.loudness.true_peak_dbtp)} dBTP is above the ${AD_RULES.peakCeilingDbtp} dBTP ceiling and may clip after encoding`
          : `; true peak ${s1(f.loudness.true_peak_dbtp)} dBTP, under the ${AD_RULES.peakCeilingDbtp} dBTP ceiling`;
    out.push(`Sound: integrated loudness ${s1(f.loudness.integrated_lufs)} LUFS, ${level}${peak}.`);
  }

  // Look.
  const changes =
    f.frames.length > 1
      ? ` Across the ${plural(f.frames.length, "shot")} measured the leading colour goes ${f.frames.map((fr) => fr.colours[0]?.name ?? "mixed").join(" -> ")}.`
      : "";
  out.push(
    `Look: mostly ${colourList(f.dominant_colours)}; average brightness ${s1(f.average_brightness)} of 100 (${brightnessWord(f.average_brightness)}).${changes}`,
  );

  // Call to action.
  if (f.call_to_action) {
    const line = f.transcript.lines.find((l) => l.text === f.call_to_action);
    out.push(`Call to action: "${f.call_to_action}"${line ? `, said at ${clock(line.at, 1)}` : ""}.`);
  } else {
    out.push(
      f.transcript.words > 0
        ? "Call to action: none is spoken; the ad relies on the platform's own button."
        : "Call to action: none can be heard.",
    );
  }
  return out.join("\n\n");
}

/** A script a creator could record, beat by beat, on the ad's own timeline (one beat per spoken line or shot). */
export function ugcScript(f: AdFacts): string {
  const end = f.duration_seconds;
  const beats: Array<{ from: number; to: number; direction: string; line: string | null }> = [];
  const lines = f.transcript.lines;
  if (lines.length) {
    lines.forEach((l, i) => {
      const from = i === 0 ? 0 : l.at;
      const to = i + 1 < lines.length ? lines[i + 1]!.at : end;
      const direction =
        i === 0
          ? "HOOK, to camera, close up"
          : l.text === f.call_to_action
            ? "CALL TO ACTION, to camera, pointing down at the link"
            : "SHOW the product in your hands";
      beats.push({ from, to, direction, line: l.text });
    });
  } else {
    const starts = [0, ...f.cut_times];
    starts.forEach((from, i) => {
      const colour = f.frames[i]?.colours[0]?.name;
      beats.push({
        from,
        to: starts[i + 1] ?? end,
        direction: `${i === 0 ? "HOOK" : "SHOW"}: a ${colour ?? "matching"} setting, no words`,
        line: null,
      });
    });
  }
  const head =
    `UGC script, ${s1(end)} seconds, ${f.orientation} ${f.width}x${f.height} like the original, ${plural(beats.length, "beat")}` +
    (f.transcript.words_per_minute !== null
      ? `, read at about ${f.transcript.words_per_minute} words per minute:`
      : ":");
  const body = beats.map(
    (b) => `[${clock(b.from)}-${clock(Math.max(b.from, b.to))}] ${b.direction}${b.line ? `: "${b.line}"` : ""}`,
  );
  return [head, ...body].join("\n");
}

export function writeAdAnalysis(input: string): AdAnalysisTexts {
  let facts: unknown;
  try {
    facts = JSON.parse(input);
  } catch {
    throw new TextGenerationError("sandbox ad analysis: the input is not JSON");
  }
  if (!isFacts(facts)) throw new TextGenerationError("sandbox ad analysis: the input is not the measured facts");
  return {
    summary: summary(facts),
    transcription: transcription(facts),
    analysis: analysis(facts),
    ugc_script: ugcScript(facts),
  };
}
