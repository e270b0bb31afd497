// What the video tests share: the video area's kernel, and the wait for a /generate-video or /merge-videos job
// to end, polled at GET /video-status/<job_id> (spec part 1, video status) until it is complete or error.
import type { Test } from "uvu";
import account from "../../plugins/account/index.ts";
import video from "../../plugins/video/index.ts";
import videoSandbox from "../../plugins/video/sandbox.ts";
import type { TestKernel } from "../../testkit/index.ts";
import type { DatabaseBackend } from "../helpers/backends.ts";
import { suiteKernel, testKernel } from "../helpers/kernel-suite.ts";
import { ended, pollStatus } from "../helpers/poll-status.ts";

/** The status answer once the job ends; throws on any other status code or once `timeoutMs` pass. */
export const videoFinished = (tk: TestKernel, key: string, id: string, timeoutMs = 180_000) =>
  pollStatus(tk, key, `/video-status/${id}`, ended, timeoutMs, 50);

/** The video area's plugins (account, the sandbox provider, video) on a kernel with its workers running, with
 * `env`: the suite's kernel, or each test's own with `perTest`. */
export function videoKernel(t: Test, backend: DatabaseBackend, env: Record<string, string>, perTest = false) {
  return (perTest ? testKernel : suiteKernel)(t, backend, {
    plugins: [account, videoSandbox, video],
    start: true,
    env,
  });
}
