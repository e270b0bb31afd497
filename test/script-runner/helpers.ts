// What the Script Runner API tests share: the kernel's plugins and settings (for test/helpers/kernel-suite.ts),
// the wait for a run to end, and solid-colour character pictures.
import account from "../../plugins/account/index.ts";
import { encodePng } from "../../plugins/images/png.ts";
import imagesSandbox from "../../plugins/images/sandbox.ts";
import scriptRunner from "../../plugins/script-runner/index.ts";
import videoSandbox from "../../plugins/video/sandbox.ts";
import type { TestKernel } from "../../testkit/index.ts";
import { pollStatus } from "../helpers/poll-status.ts";

/** The kernel's options: the runner with the image and video sandboxes (20 ms latency), and any more `env`. */
export const runnerOptions = (env: Record<string, string> = {}) => ({
  plugins: [account, imagesSandbox, videoSandbox, scriptRunner],
  start: true,
  env: { SANDBOX_LATENCY_MS: "20", PUBLIC_URL: "https://media.example.test", ...env },
});

/** The run's status answer once it is no longer processing. */
export const runEnd = async (tk: TestKernel, key: string, jobId: string, timeoutMs = 180_000) =>
  (await pollStatus(tk, key, `/script-runner/${jobId}`, (b) => b.status !== "processing", timeoutMs)).body;

/** A solid-colour 64x96 PNG as base64. */
export function png(rgb: [number, number, number]): string {
  const px = new Uint8Array(64 * 96 * 3);
  for (let i = 0; i < px.length; i += 3) px.set(rgb, i);
  return Buffer.from(encodePng(64, 96, px, 3)).toString("base64");
}
