// What characters/ and voices/ share as an account's library (spec part 3, DELETE /omni/characters/<id> and
// DELETE /omni/voices/<id>): one row and its stored file removed together (lib/library.ts).

import { deleteFromLibrary, type LibraryTable, operation } from "mediagate/plugin";
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
