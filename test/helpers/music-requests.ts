// The music provider requests the sandbox tests and the music benchmark send: a generation with the spec's
// defaults (a summer pop prompt), and an extension of a source with every control left unset, each with the
// caller's fields over them; and the source of an extension of one of our own tracks.
import type { MusicExtensionRequest, MusicGenerationRequest, MusicTrack } from "../../contracts/music.ts";

/** A generation of the summer pop prompt, V5_5, not custom, not instrumental; `o` over it. */
export function musicGeneration(o: Partial<MusicGenerationRequest> = {}): MusicGenerationRequest {
  return {
    model: "V5_5",
    prompt: "an upbeat summer pop song about the sea",
    custom: false,
    style: null,
    title: null,
    instrumental: false,
    ...o,
  };
}

/** An extension of `source` at 10 s, "keep going", V5_5, original mode, no other control; `o` over it. */
export function musicExtension(
  source: MusicExtensionRequest["source"],
  o: Partial<MusicExtensionRequest> = {},
): MusicExtensionRequest {
  return {
    model: "V5_5",
    mode: "original",
    prompt: "keep going",
    style: "",
    title: "",
    instrumental: false,
    negativeTags: null,
    vocalGender: null,
    styleWeight: null,
    weirdnessConstraint: null,
    audioWeight: null,
    personaId: null,
    personaModel: null,
    continueAt: 10,
    source,
    ...o,
  };
}

/** The source of an extension of `track`, one of ours (its MP3, duration, arrangement and title). */
export function ownTrackSource(track: MusicTrack): MusicExtensionRequest["source"] {
  return {
    bytes: track.audio,
    seconds: track.duration,
    name: "source.mp3",
    arrangement: track.arrangement,
    title: track.title,
  };
}
