// Music inputs: every rule of part 3 checked in one pass before any charge, in the order a partner fixes
// them. The zod shapes around the checks describe the fields for OpenAPI and GraphQL.
//
// Generation: custom mode is on when style and title are given (either alone is a 400); simple mode takes a
// description of at most 500 characters; custom mode takes lyrics of at most 5000, required unless
// instrumental.
//
// Extension controls: the rules that need the source (model and instrumental inheritance, continue_at
// inside the measured duration, which prompts are required on which path) are checked by `checkAgainstSource`
// once the source is known; everything else here.
import { z } from "zod";
import { type MusicControls, type MusicModel, partnerJobIdField } from "mediagate/plugin";
import { MUSIC_ERRORS as E } from "./errors.ts";
import { DEFAULT_MODEL, LIMITS, MODELS } from "./models.ts";

type Check<T> = { ok: true; value: T } | { ok: false; message: string };
const fail = <T>(message: string): Check<T> => ({ ok: false, message });
const length = (s: string) => [...s].length;

/** An optional string field: undefined/null is absent; anything but a string is a 400. */
/** An optional text field, trimmed; absent, null or blank is null; anything but a string is a 400. */
function optionalText(raw: Record<string, unknown>, field: string): string | null | { error: string } {
  const v = raw[field];
  if (v === undefined || v === null) return null;
  if (typeof v !== "string") return { error: E.notAString(field) };
  return v.trim() === "" ? null : v.trim();
}
const isError = (v: unknown): v is { error: string } => typeof v === "object" && v !== null && "error" in v;

export interface GenerateRequest {
  model: MusicModel;
  custom: boolean;
  prompt: string;
  style: string | null;
  title: string | null;
  instrumental: boolean;
}

export function checkGenerate(raw: Record<string, unknown>): Check<GenerateRequest> {
  const [prompt, style, title] = ["prompt", "style", "title"].map((f) => optionalText(raw, f));
  for (const v of [prompt, style, title]) if (isError(v)) return fail(v.error);
  const instrumental = raw.instrumental ?? false;
  if (typeof instrumental !== "boolean") return fail(E.instrumentalType);
  const model = raw.model ?? DEFAULT_MODEL;
  if (typeof model !== "string" || !(MODELS as string[]).includes(model)) return fail(E.invalidModel);

  const p = prompt as string | null, s = style as string | null, t = title as string | null;
  if ((s === null) !== (t === null)) return fail(E.styleAndTitle);
  const custom = s !== null && t !== null;
  if (!custom) {
    if (p === null) return fail(E.promptMissing);
    if (length(p) > LIMITS.simplePrompt) return fail(E.promptTooLong);
  } else {
    if (p === null && !instrumental) return fail(E.lyricsMissing);
    if (p !== null && length(p) > LIMITS.customPrompt) return fail(E.lyricsTooLong);
    if (length(s) > LIMITS.style) return fail(E.styleTooLong);
    if (length(t) > LIMITS.title) return fail(E.titleTooLong);
  }
  return { ok: true, value: { model: model as MusicModel, custom, prompt: p ?? "", style: s, title: t, instrumental } };
}

export interface ExtendControls extends MusicControls {
  /** Null when not supplied: an owned source decides, an upload defaults to V5_5. */
  model: MusicModel | null;
  /** Null when not supplied: an owned source decides, an upload defaults to false. */
  instrumental: boolean | null;
  /** Null for the multipart form. */
  source: { ref: string; track: number } | null;
}

const TWO_DECIMALS = (n: number) => Math.abs(Math.round(n * 100) - n * 100) < 1e-9;

function weight(raw: Record<string, unknown>, field: string): number | null | { error: string } {
  const v = raw[field];
  if (v === undefined || v === null) return null;
  if (typeof v !== "number" || !Number.isFinite(v) || v < 0 || v > 1 || !TWO_DECIMALS(v)) return { error: E.weight(field) };
  return v;
}

/** Checks the controls on their own; `upload` says the body was multipart (no `source` allowed then). */
export function checkExtendControls(raw: Record<string, unknown>, upload: boolean): Check<ExtendControls> {
  if ("request_id" in raw) return fail(E.requestIdInBody);
  let source: ExtendControls["source"] = null;
  if (upload) {
    if (raw.source !== undefined) return fail(E.sourceInUpload);
  } else {
    const s = raw.source;
    if (s === undefined || s === null) return fail(E.sourceRequired);
    if (typeof s !== "object" || Array.isArray(s)) return fail(E.invalidSource);
    const { kind, ref, track = 0 } = s as Record<string, unknown>;
    // Provider ids, paths and URLs are never a source: only our own job id, by its shape.
    if (kind !== "svc_music" || typeof ref !== "string" || !/^svc-[0-9a-f]{8}$/.test(ref)) return fail(E.invalidSource);
    if (typeof track !== "number" || !Number.isInteger(track) || track < 0) return fail(E.invalidSource);
    source = { ref, track };
  }

  const continueAt = raw.continue_at;
  if (continueAt === undefined || continueAt === null) return fail(E.continueAtMissing);
  if (typeof continueAt !== "number" || !Number.isFinite(continueAt) || continueAt <= 0) return fail(E.continueAtPositive);

  const mode = raw.mode ?? "original";
  if (mode !== "original" && mode !== "custom") return fail(E.invalidMode);
  const model = raw.model ?? null;
  if (model !== null && (typeof model !== "string" || !(MODELS as string[]).includes(model))) return fail(E.invalidModel);
  const instrumental = raw.instrumental ?? null;
  if (instrumental !== null && typeof instrumental !== "boolean") return fail(E.instrumentalType);

  const text: Partial<Record<string, string | null>> = {};
  for (const [f, max, tooLong] of [
    ["prompt", LIMITS.customPrompt, E.lyricsTooLong],
    ["style", LIMITS.style, E.styleTooLong],
    ["title", LIMITS.title, E.titleTooLong],
    ["negative_tags", LIMITS.negativeTags, E.negativeTagsTooLong],
    ["persona_id", LIMITS.personaId, E.personaIdTooLong],
    ["persona_model", LIMITS.personaModel, E.personaModelTooLong],
  ] as const) {
    const v = optionalText(raw, f);
    if (isError(v)) return fail(v.error);
    if (v !== null && length(v) > max) return fail(tooLong);
    text[f] = v;
  }
  if (mode === "custom" && (!text.style || !text.title)) return fail(E.customNeedsStyleAndTitle);
  if (mode !== "custom" && (text.persona_id || text.persona_model)) return fail(E.personaCustomOnly);

  const vocalGender = raw.vocal_gender ?? null;
  if (vocalGender !== null && vocalGender !== "m" && vocalGender !== "f") return fail(E.vocalGender);
  const weights: Record<string, number | null> = {};
  for (const f of ["style_weight", "weirdness_constraint", "audio_weight"]) {
    const w = weight(raw, f);
    if (isError(w)) return fail(w.error);
    weights[f] = w;
  }
  return {
    ok: true,
    value: {
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
    },
  };
}

/** What the source decides, and the rules that depend on it (part 3, the Controls table). */
export function checkAgainstSource(
  c: ExtendControls,
  source: { model: MusicModel | null; instrumental: boolean | null; seconds: number; direct: boolean },
): Check<{ model: MusicModel; instrumental: boolean }> {
  if (source.model !== null && c.model !== null && c.model !== source.model) return fail(E.modelMismatch(source.model));
  if (source.instrumental !== null && c.instrumental !== null && c.instrumental !== source.instrumental) return fail(E.instrumentalMismatch(source.instrumental));
  const model = source.model ?? c.model ?? DEFAULT_MODEL;
  const instrumental = source.instrumental ?? c.instrumental ?? false;
  if (!(c.continueAt < source.seconds)) return fail(E.continueAtOutside(Math.round(source.seconds * 100) / 100));
  const promptRequired = source.direct ? c.mode === "custom" : c.mode === "original" || !instrumental;
  if (promptRequired && c.prompt === "") return fail(E.promptRequired);
  return { ok: true, value: { model, instrumental } };
}

const described = <T extends Record<string, unknown>>(json: T) => z.unknown().optional().meta(json);

export const GenerateMusicInput = z
  .object({
    prompt: described({ type: "string", maxLength: LIMITS.customPrompt, description: "simple mode: a description (max 500); custom mode: lyrics (max 5000), required unless instrumental" }),
    model: described({ type: "string", enum: MODELS, default: DEFAULT_MODEL }),
    instrumental: described({ type: "boolean", default: false }),
    style: described({ type: "string", maxLength: LIMITS.style, description: "genre/mood; with title, selects custom mode" }),
    title: described({ type: "string", maxLength: LIMITS.title, description: "with style, selects custom mode" }),
    partner_job_id: partnerJobIdField().meta({ type: "string" }),
  })
  .transform((raw, ctx) => {
    const checked = checkGenerate(raw as Record<string, unknown>);
    if (!checked.ok) {
      ctx.addIssue({ code: "custom", message: checked.message });
      return z.NEVER;
    }
    return { ...checked.value, partner_job_id: raw.partner_job_id };
  });

/**
 * The JSON body of POST /extend-music, or the `parameters` JSON of its multipart form. Which of the two it
 * was is only known to the handler (an `audio` file part), so the checks that depend on it run there
 * (`checkExtendControls`); this shape keeps the object whole and documents it.
 */
export const ExtendMusicInput = z
  .object({
    continue_at: described({ type: "number", exclusiveMinimum: 0, description: "seconds; less than the source duration" }),
    mode: described({ type: "string", enum: ["original", "custom"], default: "original" }),
    model: described({ type: "string", enum: MODELS, description: "an owned source's model; a supplied value must match" }),
    prompt: described({ type: "string", maxLength: LIMITS.customPrompt }),
    style: described({ type: "string", maxLength: LIMITS.style }),
    title: described({ type: "string", maxLength: LIMITS.title }),
    instrumental: described({ type: "boolean", description: "an owned source's setting; a supplied value must match" }),
    negative_tags: described({ type: "string", maxLength: LIMITS.negativeTags }),
    vocal_gender: described({ type: "string", enum: ["m", "f"] }),
    style_weight: described({ type: "number", minimum: 0, maximum: 1 }),
    weirdness_constraint: described({ type: "number", minimum: 0, maximum: 1 }),
    audio_weight: described({ type: "number", minimum: 0, maximum: 1 }),
    persona_id: described({ type: "string", maxLength: LIMITS.personaId }),
    persona_model: described({ type: "string", maxLength: LIMITS.personaModel }),
    source: z
      .unknown()
      .optional()
      .meta({
        type: "object",
        title: "MusicSource",
        properties: { kind: { type: "string", enum: ["svc_music"] }, ref: { type: "string", description: "your music job_id" }, track: { type: "integer", minimum: 0, default: 0 } },
        required: ["kind", "ref"],
        description: "JSON form only: the owned track to extend",
      }),
    partner_job_id: partnerJobIdField({ music: true, message: E.invalidPartnerJobId }).meta({ type: "string" }),
  })
  .loose();
