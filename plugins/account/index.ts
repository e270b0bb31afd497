// Account endpoints (spec part 1 "Account"): the declaration. A small plugin: no jobs, prices or tables of its
// own, so only its handlers (operations.ts) beside this file.
import { definePlugin } from "mediagate/plugin";
import { credits, me, transactions, usage } from "./operations.ts";

export default definePlugin({
  name: "account",
  operations: [credits, me, usage, transactions],
});
