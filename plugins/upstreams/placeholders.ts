// A route's `input` template and `output` path (issue 39 item 1). A template is JSON whose "{placeholder}"
// strings take the request's values: a string that is exactly one placeholder takes the value as its JSON
// type (a number stays a number, a list a list); placeholders inside a longer string are written as text; a
// placeholder without a value drops its key (or its list item). Every placeholder is documented in
// docs/upstreams.md, from the table below.

/** Every placeholder a template may use, with what it holds (docs/upstreams.md lists the same). */
export const PLACEHOLDERS = {
  prompt: "the request's prompt (text)",
  negative_prompt: "video: what the clip should avoid (text; absent when not given)",
  aspect_ratio: 'the output\'s aspect ratio, e.g. "16:9" (text)',
  width: "the output's width in pixels (number)",
  height: "the output's height in pixels (number)",
  resolution: 'video and Omni: the quality class of the output, "720p", "1080p" or "4K" (text)',
  quality: 'images: "1K", "2K" or "4K" by the longer side (text)',
  duration: "video and Omni: the clip's length in seconds (number)",
  seconds: "the same as duration (number)",
  audio: "video: whether the clip has sound (boolean)",
  seed: "Omni: the request's seed (number; absent when not given); images: the picture's index in its request",
  image_url: "the first reference image, or the video's first frame (URL)",
  image_urls: "every reference image, in order (list of URLs)",
  end_image_url: "the video's or Omni clip's last frame (URL)",
  video_url: "the first reference video (URL)",
  video_urls: "every reference video (list of URLs)",
  audio_url: "video: the first reference audio; music extension: the source song (URL)",
  background: 'images: "auto", "transparent" or "opaque"',
  style: "music: the style text (absent in simple mode)",
  title: "music: the title (absent when not given)",
  instrumental: "music: whether the song has no vocals (boolean)",
  continue_at: "music extension: where the extension starts, in seconds (number)",
  model: "the spec's model id the partner asked for (text)",
} as const;

export type PlaceholderName = keyof typeof PLACEHOLDERS;
export type PlaceholderValues = Partial<Record<PlaceholderName, unknown>>;

const ONE = /^\{([a-z_]+)\}$/;
const ANY = /\{([a-z_]+)\}/g;
const DROP = Symbol("drop");

/** The first unknown placeholder in a template, with its JSON path; null when all are known. */
export function checkTemplate(template: unknown, path: string): { path: string; problem: string } | null {
  if (typeof template === "string") {
    for (const m of template.matchAll(ANY))
      if (!Object.hasOwn(PLACEHOLDERS, m[1]!)) return { path, problem: `unknown placeholder {${m[1]}}` };
    return null;
  }
  if (Array.isArray(template)) {
    for (let i = 0; i < template.length; i++) {
      const bad = checkTemplate(template[i], `${path}[${i}]`);
      if (bad) return bad;
    }
    return null;
  }
  if (typeof template === "object" && template !== null) {
    for (const [k, v] of Object.entries(template)) {
      const bad = checkTemplate(v, `${path}.${k}`);
      if (bad) return bad;
    }
  }
  return null;
}

const has = (values: PlaceholderValues, name: string) =>
  Object.hasOwn(values, name) &&
  values[name as PlaceholderName] !== undefined &&
  values[name as PlaceholderName] !== null;

function fill(template: unknown, values: PlaceholderValues): unknown {
  if (typeof template === "string") {
    const one = ONE.exec(template);
    if (one) return has(values, one[1]!) ? values[one[1] as PlaceholderName] : DROP;
    let missing = false;
    const text = template.replace(ANY, (_, name: string) => {
      if (!has(values, name)) {
        missing = true;
        return "";
      }
      const v = values[name as PlaceholderName];
      return typeof v === "string" ? v : JSON.stringify(v);
    });
    return missing ? DROP : text;
  }
  if (Array.isArray(template)) return template.map((v) => fill(v, values)).filter((v) => v !== DROP);
  if (typeof template === "object" && template !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(template)) {
      const filled = fill(v, values);
      if (filled !== DROP) out[k] = filled;
    }
    return out;
  }
  return template;
}

/**
 * The upstream's input: the capability's default template with the route's `input` merged over it (a key set
 * to null there removes the default's), placeholders filled.
 */
export function buildInput(
  defaults: Record<string, unknown>,
  route: Record<string, unknown> | undefined,
  values: PlaceholderValues,
): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...defaults };
  for (const [k, v] of Object.entries(route ?? {})) {
    if (v === null) delete merged[k];
    else merged[k] = v;
  }
  return fill(merged, values) as Record<string, unknown>;
}

const SEGMENT = /^([A-Za-z_$][\w$-]*)?((?:\[\d+\])*)$/;

/** Whether `path` is a dotted path such as `data.images[0].url` or `output[1]`. */
export function checkOutputPath(path: string): boolean {
  if (path.length === 0 || path.length > 200) return false;
  return path.split(".").every((part) => part.length > 0 && SEGMENT.test(part) && part !== "");
}

/**
 * The media URLs at `path` in a result: a string, a list of strings, or objects with a `url` (one or a list).
 * Empty when the path leads nowhere.
 */
export function readOutputPath(result: unknown, path: string): string[] {
  let at: unknown = result;
  for (const part of path.split(".")) {
    const m = SEGMENT.exec(part);
    if (!m) return [];
    if (m[1] !== undefined)
      at = typeof at === "object" && at !== null ? (at as Record<string, unknown>)[m[1]] : undefined;
    for (const index of m[2]!.matchAll(/\[(\d+)\]/g)) at = Array.isArray(at) ? at[Number(index[1])] : undefined;
  }
  const urlOf = (v: unknown) =>
    typeof v === "string"
      ? v
      : typeof v === "object" && v !== null && typeof (v as { url?: unknown }).url === "string"
        ? (v as { url: string }).url
        : undefined;
  const list = Array.isArray(at) ? at : [at];
  return list.map(urlOf).filter((u): u is string => typeof u === "string" && u.length > 0);
}
