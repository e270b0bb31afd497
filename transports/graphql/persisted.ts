// Persisted operations (GRAPHQL_PERSISTED_OPERATIONS, GRAPHQL_PERSISTED_ONLY): an operator publishes the
// documents a frontend may send, as a JSON manifest `{ "<id>": "<document>" }` (the shape gql.tada's
// `generate-persisted` writes; any id string works, `sha256:<hex>` by convention). A client then sends
// `documentId` (or Apollo's `extensions.persistedQuery.sha256Hash`) instead of the text. With
// GRAPHQL_PERSISTED_ONLY=on the manifest is an allow-list: any other document is refused, over HTTP and over
// WebSocket alike, before it is parsed. Checked once here for both transports (yoga.ts, websocket.ts).
import { readFileSync } from "node:fs";
import { GraphQLError } from "graphql";
import { ConfigError } from "../../lib/plugin-config.ts";

export const PERSISTED_ERRORS = {
  notFound: "Persisted operation not found.",
  only: "Only persisted operations are allowed here: send a documentId of the published manifest.",
} as const;

export interface PersistedOperations {
  readonly only: boolean;
  /** The manifest's document for an id, a refusal, or null: run the query as sent. */
  resolve(params: {
    query?: unknown;
    documentId?: unknown;
    extensions?: unknown;
  }): { query: string } | { error: GraphQLError } | null;
}

/** The manifest's id in the parameters: `documentId`, or Apollo's `extensions.persistedQuery.sha256Hash`. */
function idOf(params: { documentId?: unknown; extensions?: unknown }): string | undefined {
  if (typeof params.documentId === "string") return params.documentId;
  const hash = (params.extensions as { persistedQuery?: { sha256Hash?: unknown } } | undefined)?.persistedQuery
    ?.sha256Hash;
  if (typeof hash !== "string") return undefined;
  return hash.includes(":") ? hash : `sha256:${hash}`;
}

const refusal = (message: string, status: number, code: string) =>
  new GraphQLError(message, { extensions: { code, status, http: { status } } });

/** Reads the manifest at boot; a missing or malformed file stops the boot naming the variable. */
export function loadPersistedOperations(path: string | undefined, only: boolean): PersistedOperations | undefined {
  if (!path) {
    if (only)
      throw new ConfigError("GRAPHQL_PERSISTED_ONLY=on needs GRAPHQL_PERSISTED_OPERATIONS (the manifest's path)");
    return undefined;
  }
  let manifest: Map<string, string>;
  try {
    const parsed = JSON.parse(readFileSync(path, "utf8")) as unknown;
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("not an object");
    manifest = new Map();
    for (const [id, document] of Object.entries(parsed)) {
      if (typeof document !== "string") throw new Error(`the value of ${id} is not a document`);
      manifest.set(id, document);
    }
  } catch (err) {
    throw new ConfigError(
      `GRAPHQL_PERSISTED_OPERATIONS must name a JSON object of id -> document (${path}: ${(err as Error).message})`,
    );
  }
  return {
    only,
    resolve(params) {
      const id = idOf(params);
      if (id !== undefined) {
        const query = manifest.get(id);
        if (query !== undefined) return { query };
        // Outside allow-list mode an unknown id sent with its text runs the text (Apollo's retry after a miss).
        if (!only && typeof params.query === "string" && params.query !== "") return null;
        return { error: refusal(PERSISTED_ERRORS.notFound, 404, "PERSISTED_QUERY_NOT_FOUND") };
      }
      return only ? { error: refusal(PERSISTED_ERRORS.only, 403, "PERSISTED_QUERY_ONLY") } : null;
    },
  };
}
