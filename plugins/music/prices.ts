// Music's models and flat price (spec part 3 "Music job"; part 1 `costs.music`); its limits are limits.ts.
import type { MusicModel } from "mediagate/plugin";

export const MODELS: readonly MusicModel[] = ["V5_5", "V5"];
export const DEFAULT_MODEL: MusicModel = "V5_5";

/** Standard-basis credits per generation or extension (two tracks); api_plus10 pays 11 through the tier math. */
export const CREDITS_PER_GENERATION = 10;
export const TRACKS_PER_GENERATION = 2;

export const MUSIC_COSTS = {
  music: {
    models: Object.fromEntries(MODELS.map((m) => [m, CREDITS_PER_GENERATION])),
    default_model: DEFAULT_MODEL,
    flat_per_generation: CREDITS_PER_GENERATION,
    tracks_per_generation: TRACKS_PER_GENERATION,
  },
};

/** One generation or extension of `model`, standard basis (custom accounts: `music.models.<model>`). */
export const musicPrice = (model: MusicModel) => ({
  lines: [{ key: ["music", "models", model], rate: CREDITS_PER_GENERATION, units: 1 }],
});
