// Hostile input (docs/architecture.md invariant 9). The kernel screens every operation's raw input, from REST and GraphQL
// alike, and the admin API's bodies, before any rule of a plugin runs and before anything is stored:
// - strings (values and field names) must be well-formed Unicode: a lone surrogate cannot be stored in jsonb
//   and has no UTF-8 form;
// - no control characters but tab, line feed and carriage return: NUL cannot be stored in a Postgres text
//   or jsonb value, and no field of the spec takes the others (C0, DEL, C1);
// - `__proto__`, `constructor` and `prototype` are no field names: an assignment by such a key changes an
//   object's prototype instead of adding a field;
// - JSON nesting is capped: the deepest body of the spec is 3 levels; a deeper one is refused before code
//   that recurses (String(), JSON.stringify, a schema library) can run out of stack.
// Plugins therefore never see such values and need no code for them; their own rules word everything else.
import { KERNEL_ERRORS } from "../lib/errors.ts";

/** The deepest nesting of objects and arrays a body may have (the spec's deepest is 3). */
export const MAX_INPUT_DEPTH = 32;

// C0 controls but tab (09), line feed (0A) and carriage return (0D); DEL; C1 controls.
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/;
// With the `u` flag a surrogate range matches only an unpaired half (String.prototype.isWellFormed is ES2024,
// past this project's lib).
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
const RESERVED_KEYS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);
const MAX_LABEL = 100;

const textProblem = (text: string, label: () => string): string | null => {
  if (LONE_SURROGATE.test(text)) return KERNEL_ERRORS.illFormedText(label());
  if (CONTROL.test(text)) return KERNEL_ERRORS.controlCharacter(label());
  return null;
};

const child = (path: string, key: string | number) =>
  typeof key === "number" ? `${path}[${key}]` : path === "" ? key : `${path}.${key}`;
const cut = (label: string) => (label.length > MAX_LABEL ? `${label.slice(0, MAX_LABEL)}...` : label);

/**
 * The first hostile value of an input (document order), as the 400 text naming its field (`prompt`,
 * `ref_images[0].base64`), or null. `depth` is the input's own level: 1 for a body object.
 */
export function screenInput(input: unknown, depth = 1): string | null {
  // Iterative, so the screen itself has no recursion to exhaust.
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value: input, path: "", depth }];
  while (stack.length > 0) {
    const { value, path, depth: level } = stack.pop()!;
    if (typeof value === "string") {
      const problem = textProblem(value, () => cut(path || "input"));
      if (problem) return problem;
      continue;
    }
    if (value === null || typeof value !== "object") continue;
    if (level > MAX_INPUT_DEPTH) return KERNEL_ERRORS.tooDeep(MAX_INPUT_DEPTH);
    const next: Array<{ value: unknown; path: string; depth: number }> = [];
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) next.push({ value: value[i], path: child(path, i), depth: level + 1 });
    } else {
      for (const key of Object.keys(value)) {
        if (LONE_SURROGATE.test(key) || CONTROL.test(key)) return KERNEL_ERRORS.invalidFieldName;
        if (RESERVED_KEYS.has(key)) return KERNEL_ERRORS.reservedFieldName(cut(child(path, key)));
        next.push({ value: (value as Record<string, unknown>)[key], path: child(path, key), depth: level + 1 });
      }
    }
    for (let i = next.length - 1; i >= 0; i--) stack.push(next[i]!);
  }
  return null;
}
