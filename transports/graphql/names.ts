// GraphQL names derived from the REST declarations, so a partner can guess one API from the other:
// `GET /image-status/<id>` is `imageStatus(id:)`, `POST /generate-image` is `generateImage(input:)`.
// Names depend only on the registered operations, never on registration order, so the committed
// schema/schema.graphql changes only when a declaration does.
import type { CompiledOperation } from "../../core/registry.ts";

export type RootKind = "Query" | "Mutation";

const GRAPHQL_NAME = /^[_A-Za-z][_0-9A-Za-z]*$/;

export const isGraphqlName = (name: string): boolean => GRAPHQL_NAME.test(name) && !name.startsWith("__");

function words(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean);
}

export function pascalCase(text: string): string {
  const out = words(text)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join("");
  return /^[0-9]/.test(out) ? `_${out}` : out;
}

function camelCase(text: string): string {
  const p = pascalCase(text);
  return p.startsWith("_") ? p : p.charAt(0).toLowerCase() + p.slice(1);
}

/** Path parameters in declaration order: `/a/<x>/b/<y>` gives `["x", "y"]`. */
export const pathParams = (path: string): string[] =>
  [...path.matchAll(/<([A-Za-z_][A-Za-z0-9_]*)>/g)].map((m) => m[1]!);

export const rootOf = (op: CompiledOperation): RootKind => (op.method === "GET" ? "Query" : "Mutation");

// POST paths in the spec are already verbs (`/generate-image`); PATCH and DELETE share their paths with a
// GET or POST, so their fields say what they do.
const VERB: Record<string, string> = { PATCH: "update", DELETE: "delete" };

function baseName(op: CompiledOperation): string {
  const fixed = op.path
    .split("/")
    .filter((s) => s && !/^<.*>$/.test(s))
    .join("-");
  const verb = VERB[op.method];
  const name = camelCase([verb, fixed || "root"].filter(Boolean).join("-"));
  return name;
}

/**
 * The root field name of every operation. `GET /captions` and `GET /captions/<job_id>` would both be
 * `captions`; when a base name is shared within a root type, the ones with path parameters say which
 * (`captionsByJobId`). A clash that remains is a boot error naming both plugins and both endpoints
 * (core/registry.ts calls this at boot, before any connection).
 */
export function fieldNames(operations: readonly CompiledOperation[]): Map<CompiledOperation, string> {
  const groups = new Map<string, CompiledOperation[]>();
  for (const op of operations) {
    const key = `${rootOf(op)} ${baseName(op)}`;
    groups.set(key, [...(groups.get(key) ?? []), op]);
  }
  const names = new Map<CompiledOperation, string>();
  const taken = new Map<string, CompiledOperation>();
  for (const group of groups.values()) {
    for (const op of group) {
      const params = pathParams(op.path);
      let name = baseName(op);
      if (group.length > 1 && params.length) name += `By${params.map(pascalCase).join("And")}`;
      const key = `${rootOf(op)} ${name}`;
      const other = taken.get(key);
      if (other)
        throw new Error(
          `GraphQL field ${rootOf(op)}.${name} is claimed by "${other.plugin}" (${other.endpoint}) and "${op.plugin}" (${op.endpoint})`,
        );
      if (!isGraphqlName(name))
        throw new Error(
          `plugin "${op.plugin}": ${op.endpoint} gives the GraphQL field name "${name}", which GraphQL does not allow`,
        );
      taken.set(key, op);
      names.set(op, name);
    }
  }
  return names;
}
