// Music inputs: every rule of part 3 checked in one pass before any charge, in the order a partner fixes
// them. The fields beside the checks describe the bodies for OpenAPI and GraphQL.
//
// Generation: custom mode is on when style and title are given (either alone is a 400); simple mode takes a
// description of at most 500 characters; custom mode takes lyrics of at most 5000, required unless
// instrumental.
//
// Extension controls: the rules that need the source (model and instrumental inheritance, continue_at
// inside the measured duration, which prompts are required on which path) are checked by `checkAgainstSource`
// once the source is known; everything else here.
import {
  type Checked,
  checked,
  defineInput,
  type Fail,
  field,
  type InferOutput,
  isJobId,
  type MusicControls,
  type MusicModel,
} from "mediagate/plugin";
import { MUSIC_ERRORS } from "./errors.ts";
import { LIMITS } from "./limits.ts";
import { DEFAULT_MODEL, MODELS } from "./prices.ts";

const length = (s: string) => [...s].length;

/** An optional text field, trimmed; absent, null or blank is null; anything but a string is a 400. */
function optionalText(raw: Record<string, unknown>, name: string, fail: Fail): string | null {
  const v = raw[name];
  if (v === undefined || v === null) return null;
  if (typeof v !== "string") return fail(MUSIC_ERRORS.notAString(name));
  return v.trim() === "" ? null : v.trim();
}

/** The validated generation body without its partner_job_id, as the job carries it. */
export type GenerateRequest = Omit<InferOutput<typeof GenerateMusicInput>, "partner_job_id">;

export const GenerateMusicInput = defineInput({
  fields: {
    prompt: field.string({
      maxLength: LIMITS.customPrompt,
      description: "simple mode: a description (max 500); custom mode: lyrics (max 5000), required unless instrumental",
    }),
    model: field.string({ enum: MODELS, default: DEFAULT_MODEL }),
    instrumental: field.boolean({ default: false }),
    style: field.string({ maxLength: LIMITS.style, description: "genre/mood; with title, selects custom mode" }),
    title: field.string({ maxLength: LIMITS.title, description: "with style, selects custom mode" }),
    partner_job_id: field.partnerJobId(),
  },
  check(raw, fail) {
    const p = optionalText(raw, "prompt", fail);
    const s = optionalText(raw, "style", fail);
    const t = optionalText(raw, "title", fail);
    const instrumental = raw.instrumental ?? false;
    if (typeof instrumental !== "boolean") return fail(MUSIC_ERRORS.instrumentalType);
    const model = raw.model ?? DEFAULT_MODEL;
    if (typeof model !== "string" || !(MODELS as string[]).includes(model)) return fail(MUSIC_ERRORS.invalidModel);

    if ((s === null) !== (t === null)) return fail(MUSIC_ERRORS.styleAndTitle);
    const custom = s !== null && t !== null;
    if (!custom) {
      if (p === null) return fail(MUSIC_ERRORS.promptMissing);
      if (length(p) > LIMITS.simplePrompt) return fail(MUSIC_ERRORS.promptTooLong);
    } else {
      if (p === null && !instrumental) return fail(MUSIC_ERRORS.lyricsMissing);
      if (p !== null && length(p) > LIMITS.customPrompt) return fail(MUSIC_ERRORS.lyricsTooLong);
      if (length(s) > LIMITS.style) return fail(MUSIC_ERRORS.styleTooLong);
      if (length(t) > LIMITS.title) return fail(MUSIC_ERRORS.titleTooLong);
    }
    return {
      model: model as MusicModel,
      custom,
      prompt: p ?? "",
      style: s,
      title: t,
      instrumental,
      partner_job_id: raw.partner_job_id,
    };
  },
});

export interface ExtendControls extends MusicControls {
  /** Null when not supplied: an owned source decides, an upload defaults to V5_5. */
  model: MusicModel | null;
  /** Null when not supplied: an owned source decides, an upload defaults to false. */
  instrumental: boolean | null;
  /** Null for the multipart form. */
  source: { ref: string; track: number } | null;
}

const TWO_DECIMALS = (n: number) => Math.abs(Math.round(n * 100) - n * 100) < 1e-9;

function weight(raw: Record<string, unknown>, name: string, fail: Fail): number | null {
  const v = raw[name];
  if (v === undefined || v === null) return null;
  if (typeof v !== "number" || !Number.isFinite(v) || v < 0 || v > 1 || !TWO_DECIMALS(v))
    return fail(MUSIC_ERRORS.weight(name));
  return v;
}

/** Checks the controls on their own; `upload` says the body was multipart (no `source` allowed then). */
export function checkExtendControls(raw: Record<string, unknown>, upload: boolean): Checked<ExtendControls> {
  return checked((fail): ExtendControls => {
    if ("request_id" in raw) return fail(MUSIC_ERRORS.requestIdInBody);
    let source: ExtendControls["source"] = null;
    if (upload) {
      if (raw.source !== undefined) return fail(MUSIC_ERRORS.sourceInUpload);
    } else {
      const s = raw.source;
      if (s === undefined || s === null) return fail(MUSIC_ERRORS.sourceRequired);
      if (typeof s !== "object" || Array.isArray(s)) return fail(MUSIC_ERRORS.invalidSource);
      const { kind, ref, track = 0 } = s as Record<string, unknown>;
      // Provider ids, paths and URLs are never a source: only our own job id, by its shape.
      if (kind !== "svc_music" || !isJobId(ref)) return fail(MUSIC_ERRORS.invalidSource);
      if (typeof track !== "number" || !Number.isSafeInteger(track) || track < 0)
        return fail(MUSIC_ERRORS.invalidSource);
      source = { ref, track };
    }

    const continueAt = raw.continue_at;
    if (continueAt === undefined || continueAt === null) return fail(MUSIC_ERRORS.continueAtMissing);
    if (typeof continueAt !== "number" || !Number.isFinite(continueAt) || continueAt <= 0)
      return fail(MUSIC_ERRORS.continueAtPositive);

    const mode = raw.mode ?? "original";
    if (mode !== "original" && mode !== "custom") return fail(MUSIC_ERRORS.invalidMode);
    const model = raw.model ?? null;
    if (model !== null && (typeof model !== "string" || !(MODELS as string[]).includes(model)))
      return fail(MUSIC_ERRORS.invalidModel);
    const instrumental = raw.instrumental ?? null;
    if (instrumental !== null && typeof instrumental !== "boolean") return fail(MUSIC_ERRORS.instrumentalType);

    const text: Partial<Record<string, string | null>> = {};
    for (const [f, max, tooLong] of [
      ["prompt", LIMITS.customPrompt, MUSIC_ERRORS.lyricsTooLong],
      ["style", LIMITS.style, MUSIC_ERRORS.styleTooLong],
      ["title", LIMITS.title, MUSIC_ERRORS.titleTooLong],
      ["negative_tags", LIMITS.negativeTags, MUSIC_ERRORS.negativeTagsTooLong],
      ["persona_id", LIMITS.personaId, MUSIC_ERRORS.personaIdTooLong],
      ["persona_model", LIMITS.personaModel, MUSIC_ERRORS.personaModelTooLong],
    ] as const) {
      const v = optionalText(raw, f, fail);
      if (v !== null && length(v) > max) return fail(tooLong);
      text[f] = v;
    }
    if (mode === "custom" && (!text.style || !text.title)) return fail(MUSIC_ERRORS.customNeedsStyleAndTitle);
    if (mode !== "custom" && (text.persona_id || text.persona_model)) return fail(MUSIC_ERRORS.personaCustomOnly);

    const vocalGender = raw.vocal_gender ?? null;
    if (vocalGender !== null && vocalGender !== "m" && vocalGender !== "f") return fail(MUSIC_ERRORS.vocalGender);
    const weights: Record<string, number | null> = {};
    for (const f of ["style_weight", "weirdness_constraint", "audio_weight"]) weights[f] = weight(raw, f, fail);
    return {
      continueAt,
      mode,
      model: model as MusicModel | null,
      instrumental: instrumental as boolean | null,
      prompt: text.prompt ?? "",
      style: text.style ?? "",
      title: text.title ?? "",
      negativeTags: text.negative_tags ?? null,
      vocalGender: vocalGender as "m" | "f" | null,
      styleWeight: weights.style_weight!,
      weirdnessConstraint: weights.weirdness_constraint!,
      audioWeight: weights.audio_weight!,
      personaId: text.persona_id ?? null,
      personaModel: text.persona_model ?? null,
      source,
    };
  });
}

/** What the source decides, and the rules that depend on it (part 3, the Controls table). */
export function checkAgainstSource(
  c: ExtendControls,
  source: { model: MusicModel | null; instrumental: boolean | null; seconds: number; direct: boolean },
): Checked<{ model: MusicModel; instrumental: boolean }> {
  return checked((fail) => {
    if (source.model !== null && c.model !== null && c.model !== source.model)
      return fail(MUSIC_ERRORS.modelMismatch(source.model));
    if (source.instrumental !== null && c.instrumental !== null && c.instrumental !== source.instrumental)
      return fail(MUSIC_ERRORS.instrumentalMismatch(source.instrumental));
    const model = source.model ?? c.model ?? DEFAULT_MODEL;
    const instrumental = source.instrumental ?? c.instrumental ?? false;
    if (!(c.continueAt < source.seconds))
      return fail(MUSIC_ERRORS.continueAtOutside(Math.round(source.seconds * 100) / 100));
    const promptRequired = source.direct ? c.mode === "custom" : c.mode === "original" || !instrumental;
    if (promptRequired && c.prompt === "") return fail(MUSIC_ERRORS.promptRequired);
    return { model, instrumental };
  });
}

/**
 * The JSON body of POST /extend-music, or the `parameters` JSON of its multipart form. Which of the two it
 * was is only known to the handler (an `audio` file part), so the checks that depend on it run there
 * (`checkExtendControls`); this declaration keeps the object whole and documents it.
 */
export const ExtendMusicInput = defineInput({
  fields: {
    continue_at: field.number({ exclusiveMinimum: 0, description: "seconds; less than the source duration" }),
    mode: field.string({ enum: ["original", "custom"], default: "original" }),
    model: field.string({ enum: MODELS, description: "an owned source's model; a supplied value must match" }),
    prompt: field.string({ maxLength: LIMITS.customPrompt }),
    style: field.string({ maxLength: LIMITS.style }),
    title: field.string({ maxLength: LIMITS.title }),
    instrumental: field.boolean({ description: "an owned source's setting; a supplied value must match" }),
    negative_tags: field.string({ maxLength: LIMITS.negativeTags }),
    vocal_gender: field.string({ enum: ["m", "f"] }),
    style_weight: field.number({ minimum: 0, maximum: 1 }),
    weirdness_constraint: field.number({ minimum: 0, maximum: 1 }),
    audio_weight: field.number({ minimum: 0, maximum: 1 }),
    persona_id: field.string({ maxLength: LIMITS.personaId }),
    persona_model: field.string({ maxLength: LIMITS.personaModel }),
    source: field.object({
      title: "MusicSource",
      properties: {
        kind: { type: "string", enum: ["svc_music"] },
        ref: { type: "string", description: "your music job_id" },
        track: { type: "integer", minimum: 0, default: 0 },
      },
      required: ["kind", "ref"],
      description: "JSON form only: the owned track to extend",
    }),
    partner_job_id: field.partnerJobId({ music: true, message: MUSIC_ERRORS.invalidPartnerJobId }),
  },
  loose: true,
});
