// GET /omni/videos `since` (spec part 3: ISO 8601 UTC): only videos created at or after the instant, the
// bound itself included, a zone offset read as the same instant, a date alone as its midnight UTC, and a
// value that is not a timestamp a 400 that changes nothing.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { KERNEL_ERRORS } from "../../lib/errors.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { suiteKernel } from "../helpers/kernel-suite.ts";
import { OMNI_LIMITS, omniOptions } from "./helpers.ts";

for (const backend of await databaseBackends()) {
  const t = suite(`omni videos since on ${backend.name}`);
  const tk = suiteKernel(t, backend, omniOptions());

  t("since keeps videos created at or after the instant", async () => {
    const { key } = await tk.partner({ limits: OMNI_LIMITS });
    const ids: string[] = [];
    for (const prompt of ["old", "middle", "new"]) {
      const res = await tk.request("POST", "/omni/video", { key, body: { prompt, duration: 4 } });
      assert.is(res.status, 202, JSON.stringify(res.body));
      ids.push(res.body.job_id);
    }
    // Creation times set apart by days, so the filter, not the clock, decides.
    const at = ["2026-01-01T00:00:00Z", "2026-02-01T12:00:00Z", "2026-03-01T00:00:00Z"];
    for (let i = 0; i < 3; i++) {
      await tk.kernel.database.kysely
        .updateTable("omni_videos" as any)
        .set({ created_at: new Date(at[i]!) } as any)
        .where("job_id" as any, "=", ids[i])
        .execute();
    }
    const list = async (since?: string) => {
      const res = await tk.request(
        "GET",
        `/omni/videos${since === undefined ? "" : `?since=${encodeURIComponent(since)}`}`,
        { key },
      );
      assert.is(res.status, 200, JSON.stringify(res.body));
      return res.body.videos.map((v: any) => v.job_id);
    };
    assert.equal(await list(), [ids[2], ids[1], ids[0]]);
    assert.equal(await list(""), [ids[2], ids[1], ids[0]]);
    assert.equal(await list("2026-02-01T12:00:00Z"), [ids[2], ids[1]], "the bound itself is included");
    assert.equal(await list("2026-02-01T12:00:01Z"), [ids[2]]);
    assert.equal(await list("2026-02-01T14:00:00+02:00"), [ids[2], ids[1]], "an offset names the same instant");
    assert.equal(await list("2026-02-01 12:00:00"), [ids[2], ids[1]], "no zone is UTC");
    assert.equal(await list("2026-02-02"), [ids[2]], "a date is its midnight UTC");
    assert.equal(await list("2026-04-01T00:00:00Z"), []);
    for (const bad of ["yesterday", "2026-02-31", "1706745600"]) {
      const res = await tk.request("GET", `/omni/videos?since=${encodeURIComponent(bad)}`, { key });
      assert.is(res.status, 400, bad);
      assert.is(res.body.error, KERNEL_ERRORS.invalidSince, bad);
    }
  });

  t.run();
}
