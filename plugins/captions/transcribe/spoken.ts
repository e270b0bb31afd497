// The chain's first provider: the record of our own synthesis (a generated video or voiceover with sound,
// SpokenRecord in contracts/speech.ts). We spoke those words and measured their times as we made the file,
// so they are used as they are: no recognition, confidence 1. Declines when the request carries no record or
// a record without a usable word (the chain then listens to the audio).
import type { TimedWord, TranscribeRequest, Transcript, TranscriptionProvider } from "mediagate/plugin";

/**
 * The words of a record that can be shown: text not blank, times finite, 0 ≤ start < end; in time order.
 * The record is ours, but it travels through a job row, so it is read as data rather than trusted.
 */
export function usableWords(words: readonly TimedWord[]): TimedWord[] {
  const out: TimedWord[] = [];
  for (const w of words) {
    if (!w || typeof w.text !== "string") continue;
    const text = w.text.trim();
    const start = Number(w.start);
    const end = Number(w.end);
    if (!text || !Number.isFinite(start) || !Number.isFinite(end) || start < 0 || end <= start) continue;
    const c = Number(w.confidence);
    out.push({ text, start, end, confidence: Number.isFinite(c) ? Math.min(1, Math.max(0, c)) : 1 });
  }
  return out.sort((a, b) => a.start - b.start || a.end - b.end);
}

export const spokenProvider: TranscriptionProvider = {
  name: "spoken",
  async transcribe(request: TranscribeRequest): Promise<Transcript | null> {
    const record = request.spoken;
    if (!record || !Array.isArray(record.words)) return null;
    const words = usableWords(record.words);
    if (words.length === 0) return null;
    request.onProgress?.(1);
    return { language: record.language || request.language || "en", words, provider: "spoken" };
  },
};
