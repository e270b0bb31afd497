// The music table: models, the flat price, limits (spec part 3 "Music job", "Limits" 5; part 1 `costs.music`).
import { type MusicModel } from "mediagate/plugin";

export const MODELS: readonly MusicModel[] = ["V5_5", "V5"];
export const DEFAULT_MODEL: MusicModel = "V5_5";

/** Standard-basis credits per generation or extension (two tracks); api_plus10 pays 11 through the tier math. */
export const CREDITS_PER_GENERATION = 10;
export const TRACKS_PER_GENERATION = 2;

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

export const MUSIC_COSTS = {
  music: {
    models: Object.fromEntries(MODELS.map((m) => [m, CREDITS_PER_GENERATION])),
    default_model: DEFAULT_MODEL,
    flat_per_generation: CREDITS_PER_GENERATION,
    tracks_per_generation: TRACKS_PER_GENERATION,
  },
};
