// Pagination (convention 8) in one place: each list's bounds, the `limit` and `offset` query parameters, one
// page of a query with the total the same query matches, and the list's documented shape and answer body.
// A list endpoint is then: `input: pageQuery(bounds)`, `output: pageShape("images", Entry)`, and
// `pageBody("images", await listPage(query, ctx.input), ctx.input, view)`.
import { type SelectQueryBuilder, sql } from "kysely";
import { z } from "zod";
import { KERNEL_ERRORS } from "./errors.ts";

// Each list names its bounds here, so the whole of convention 8 reads as one table.
export const PAGE_BOUNDS = {
  standard: { default: 20, max: 50 },
  scriptRunner: { default: 20, max: 100 },
  omniBatches: { default: 20, max: 100 },
  voiceovers: { default: 30, max: 200 },
  music: { default: 30, max: 200 },
  transactions: { default: 50, max: 200 },
  videos: { default: 20, max: 200 },
  omniVideos: { default: 20, max: 200 },
  socialDownloads: { default: 25, max: 100 },
  webhookDeliveries: { default: 50, max: 200 },
} as const satisfies Record<string, { default: number; max: number }>;

export type PageBounds = (typeof PAGE_BOUNDS)[keyof typeof PAGE_BOUNDS];

// Choice where the spec is silent: a limit above the maximum is clamped to it (the response's `limit` says
// what was applied); a limit that is not a positive integer, or a negative offset, is a 400.
const integerText = /^\d+$/;

/** A query value (text) or a GraphQL one (number) as a safe integer, else undefined: never `String()` of an object. */
function integerOf(value: unknown): number | undefined {
  const text = typeof value === "string" ? value : typeof value === "number" ? String(value) : undefined;
  if (text === undefined || !integerText.test(text)) return undefined;
  const n = Number(text);
  // Beyond 2^53 the number is no longer the one sent, and the database would refuse it (a 500, not a 400).
  return Number.isSafeInteger(n) ? n : undefined;
}

export function limitParam(bounds: PageBounds) {
  return (
    z
      .unknown()
      .optional()
      // What documents and GraphQL show; the transform below is what accepts query-string text.
      .meta({ type: "integer", minimum: 1, maximum: bounds.max, default: bounds.default })
      .transform((value, ctx) => {
        if (value === undefined || value === "") return bounds.default;
        const n = integerOf(value);
        if (n === undefined || n < 1) {
          ctx.addIssue({ code: "custom", message: KERNEL_ERRORS.invalidLimit });
          return z.NEVER;
        }
        return Math.min(n, bounds.max);
      })
  );
}

export const offsetParam = z
  .unknown()
  .optional()
  .meta({ type: "integer", minimum: 0, default: 0 })
  .transform((value, ctx) => {
    if (value === undefined || value === "") return 0;
    const n = integerOf(value);
    if (n === undefined) {
      ctx.addIssue({ code: "custom", message: KERNEL_ERRORS.invalidOffset });
      return z.NEVER;
    }
    return n;
  });

/** `limit` and `offset` of a list endpoint with the given bounds (`.extend()` it with the list's filters). */
export function pageQuery(bounds: PageBounds) {
  return z.object({ limit: limitParam(bounds), offset: offsetParam });
}

/** The page a request asked for, as pageQuery validated it. */
export interface PageRequest {
  limit: number;
  offset: number;
}

/** One page of rows and how many rows the whole list holds. */
export interface Page<Row> {
  rows: Row[];
  total: number;
}

/**
 * One page of an ordered query, and the number of rows the same query matches: the count reuses its joins
 * and filters (not its selection or order), so `total` always counts what the pages show. For plain
 * queries; one with `group by` or `distinct` would count groups' rows.
 */
export async function listPage<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  page: PageRequest,
): Promise<Page<O>> {
  const counted = query.clearSelect().clearOrderBy().select(sql<number | string>`count(*)`.as("n"));
  const [rows, count] = await Promise.all([
    query.limit(page.limit).offset(page.offset).execute(),
    counted.executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number((count as { n: number | string }).n) };
}

type PageShape<F extends string, E extends z.ZodType> = { [K in F]: z.ZodArray<E> } & {
  total: z.ZodNumber;
  limit: z.ZodNumber;
  offset: z.ZodNumber;
};

/** The documented answer of a list: `{ <field>: [entry], total, limit, offset }`, in that order. */
export function pageShape<const F extends string, E extends z.ZodType>(field: F, entry: E) {
  // Fresh schemas per list: a shared instance would be exported as a `$defs` reference and rename GraphQL types.
  return z.object({
    [field]: z.array(entry),
    total: z.number().int(),
    limit: z.number().int(),
    offset: z.number().int(),
  } as PageShape<F, E>);
}

/** The answer body pageShape documents: the page's rows through `view`, the total, and the page applied. */
export function pageBody<const F extends string, Row, View>(
  field: F,
  page: Page<Row>,
  request: PageRequest,
  view: (row: Row) => View,
) {
  return {
    [field]: page.rows.map((row) => view(row)),
    total: page.total,
    limit: request.limit,
    offset: request.offset,
  } as { [K in F]: View[] } & { total: number; limit: number; offset: number };
}
