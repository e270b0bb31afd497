// The social downloader (spec part 1, "Social download record", the "Social download" states, "Social
// downloader" endpoints): the declaration. Handlers and the choices where the spec is silent are in
// operations.ts, the download job in job.ts, the quota in quota.ts, the record in records.ts.
import { definePlugin } from "mediagate/plugin";
import { downloadJob } from "./job.ts";
import { socialMigrations } from "./migrations.ts";
import { file, list, PAUSE, status, submit } from "./operations.ts";

export default definePlugin({
  name: "social",
  requires: ["social.extract", "media"],
  pauses: [PAUSE],
  jobs: { download: downloadJob },
  operations: [submit, status, file, list],
  migrations: socialMigrations,
});
