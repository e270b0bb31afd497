// Music's limits (spec part 3 "Limits" 5) and the upstream's deadline; its prices are prices.ts.

export const LIMITS = {
  simplePrompt: 500,
  customPrompt: 5000,
  style: 1000,
  title: 80,
  negativeTags: 1000,
  personaId: 200,
  personaModel: 100,
  uploadBytes: 95_000_000,
  uploadSeconds: 8 * 60,
} as const;

/** Upload extensions the spec lists, each with the demuxer hint the media engine gets. */
export const UPLOAD_EXTENSIONS = ["aac", "flac", "m4a", "mp3", "ogg", "wav"] as const;

/**
 * How long the upstream may take, from the submit, before its work is cancelled and the job ends with
 * `error_code` timeout (the deadline of the job's upstream wait).
 */
export const PROVIDER_TIMEOUT_MS = 10 * 60 * 1000;
