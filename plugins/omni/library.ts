// What characters/ and voices/ share as an account's library (spec part 3, GET and DELETE /omni/characters and
// /omni/voices): the rows listed newest first, one row and its stored file removed together (lib/library.ts).

import { deleteFromLibrary, type LibraryTable, listLibrary, operation } from "mediagate/plugin";
import { z } from "zod";
import { OMNI_ERRORS } from "./errors.ts";
import { OMNI_FEATURE } from "./prices.ts";

/** DELETE of one of the account's rows of `library`, at `path` (its `<id>` the row's id). */
export function libraryDeleteOperation(o: { path: string; summary: string; library: LibraryTable }) {
  return operation({
    method: "DELETE",
    path: o.path,
    feature: OMNI_FEATURE,
    summary: o.summary,
    output: z.object({ ok: z.literal(true), deleted_id: z.string() }),
    handle: (ctx) =>
      deleteFromLibrary(ctx.db, ctx.blobs, o.library, ctx.partner.id, ctx.params.id, OMNI_ERRORS.notFound),
  });
}

/**
 * GET of the account's rows of `library` at `path`, newest first: `{ [field]: [...] }`, each row as `view`
 * shows it (with the request's media links).
 */
export function libraryListOperation<Row, Shape extends z.ZodType>(o: {
  path: string;
  summary: string;
  library: LibraryTable;
  field: string;
  shape: Shape;
  view: (row: Row, mediaUrl: (key: string) => string) => z.infer<Shape>;
}) {
  return operation({
    method: "GET",
    path: o.path,
    feature: OMNI_FEATURE,
    summary: o.summary,
    output: z.object({ [o.field]: z.array(o.shape) }),
    async handle(ctx) {
      const rows = await listLibrary<Row>(ctx.db, o.library, ctx.partner.id);
      return { [o.field]: rows.map((r) => o.view(r, ctx.mediaUrl)) };
    },
  });
}
