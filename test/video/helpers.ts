// What the video tests share: the wait for a /generate-video or /merge-videos job to end, polled at
// GET /video-status/<job_id> (spec part 1, video status) until it is complete or error.
import type { TestKernel } from "../../testkit/index.ts";
import { ended, pollStatus } from "../helpers/poll-status.ts";

/** The status answer once the job ends; throws on any other status code or once `timeoutMs` pass. */
export const videoFinished = (tk: TestKernel, key: string, id: string, timeoutMs = 180_000) =>
  pollStatus(tk, key, `/video-status/${id}`, ended, timeoutMs, 50);
