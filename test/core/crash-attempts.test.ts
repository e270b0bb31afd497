// An attempt that died with its process is no failed attempt (issue 46, deliverable 4): a job of a kind with
// `retries: 0` is killed (SIGKILL) in the middle of its attempt and still ends `done`, charged once and not
// refunded. On the embedded database the restarted process, the only one that can own it, takes its killed
// attempts back as it starts (two kills in a row); on Postgres another process retries the attempt once its
// heartbeat has expired. Real processes (test/helpers/job-process.ts); the time from each kill to the job
// running again is printed, never asserted.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { seedEmbeddedDataDir } from "../../testkit/pglite-template.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { type MainProcess, spawnMain } from "../helpers/main-process.ts";

const command = [process.execPath, "--import", "tsx", "test/helpers/job-process.ts"];
const HOLD = "600000"; // an attempt that runs until it is killed

for (const backend of await databaseBackends()) {
  const t = suite(`a killed attempt is not a failed one, on ${backend.name}`);
  let dataDir = "";
  const procs: MainProcess[] = [];
  t.after.each(async () => {
    for (const p of procs.splice(0)) await p.kill();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  t(
    `a job of a kind without retries survives ${backend.name === "pglite" ? "two kills" : "a kill"} of its process and ends done, not refunded`,
    async () => {
      const env: Record<string, string> = {};
      if (backend.name === "postgres") env.DATABASE_URL = await isolatedPostgresDatabase();
      else {
        dataDir = mkdtempSync(join(tmpdir(), "mediagate-crash-"));
        await seedEmbeddedDataDir(dataDir);
        env.DATA_DIR = dataDir;
      }
      const start = (extra: Record<string, string>) => {
        const p = spawnMain({ ...env, ...extra }, command);
        procs.push(p);
        return p;
      };
      const first = start({ SUBMIT: "1", HOLD_MS: HOLD });
      await first.waitFor(/RUN \S+ 0/);
      const jobId = /RUN (\S+) 0/.exec(first.output())![1]!;
      const kills = backend.name === "pglite" ? 2 : 1;
      let killed = first;
      for (let i = 1; i <= kills; i++) {
        await killed.kill();
        const at = Date.now();
        // The last process lets the attempt finish and reports the job's end.
        const next = start({ WATCH: jobId, HOLD_MS: i === kills ? "0" : HOLD });
        await next.waitFor("STARTED", 120_000);
        const up = Date.now() - at;
        await next.waitFor(`RUN ${jobId}`, 120_000);
        console.log(
          `${backend.name}: kill ${i} -> new process up ${up} ms -> the job running again ${Date.now() - at} ms`,
        );
        killed = next;
      }
      await killed.waitFor("FINISHED", 60_000);
      const finished = /FINISHED (.*)/.exec(killed.output())![1];
      assert.is(finished, "done refunded=0 failed_attempts=0", killed.output());
    },
  );

  t.run();
}
