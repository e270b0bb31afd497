// What the video tests share: the wait for a /generate-video or /merge-videos job to end, polled at
// GET /video-status/<job_id> (spec part 1, video status) until it is complete or error.
import type { TestKernel } from "../../testkit/index.ts";

/** The status answer once the job ends; throws on any other status code or once `timeoutMs` pass. */
export async function videoFinished(tk: TestKernel, key: string, id: string, timeoutMs = 180_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await tk.request("GET", `/video-status/${id}`, { key });
    if (res.status !== 200) throw new Error(`video ${id}: ${res.status} ${JSON.stringify(res.body)}`);
    if (res.body.status === "complete" || res.body.status === "error") return res;
    if (Date.now() > until) throw new Error(`video ${id} still ${res.body.status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
