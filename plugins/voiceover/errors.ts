// Every text the voiceover plugin answers with. The quoted ones are the spec's (part 3, "Errors"); the
// output_format and source texts are ours, the spec has none.
export const VOICEOVER_ERRORS = {
  textMissing: "Please provide text to synthesize",
  textTooLong: "Text exceeds 5000-character limit",
  invalidVoice: "Invalid voice_id",
  invalidModel: "Invalid model_id",
  invalidOutputFormat: "Invalid output_format. Use an identifier such as mp3_44100_128, pcm_24000 or opus_48000_64.",
  invalidSource: "source must be a string of at most 200 characters",
  // Stored on a failed record and answered with 502 (sanitized: no provider, no internal detail).
  unavailable: "Voiceover service unavailable. Credits refunded.",
  failed: "Voiceover generation failed. Credits refunded.",
  notConfigured: "Voiceover service is not configured.",
} as const;
