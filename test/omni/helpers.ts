// What the Omni API tests share: a test kernel with the Omni plugins, raised limits, solid-colour pictures,
// polling and reading stored media back.

import * as assert from "uvu/assert";
import { type CapabilityHost, definePlugin } from "../../core/plugin.ts";
import account from "../../plugins/account/index.ts";
import { encodePng } from "../../plugins/images/png.ts";
import omni from "../../plugins/omni/index.ts";
import omniSandbox from "../../plugins/omni/sandbox.ts";
import text from "../../plugins/text/index.ts";
import webhooks from "../../plugins/webhooks/index.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { isolatedPostgresDatabase } from "../helpers/backends.ts";
import { hostSharingRenders, type RunCache } from "../helpers/memo-engine.ts";
import { ended, pollStatus } from "../helpers/poll-status.ts";

export const OMNI_PLUGINS = [account, webhooks, text, omniSandbox, omni];

/**
 * OMNI_PLUGINS with a sandbox whose engine renders each distinct ffmpeg run once per `renders`
 * (test/helpers/memo-engine.ts): the sandbox renders a 1080p clip per job (seconds of x264 each),
 * deterministically from the request, so the same job on the other backend, or again in another test, shares
 * the first render. The sandbox's markers, speech and arguments still run per job. Native engine only: a test
 * of another engine must render for itself.
 */
export function omniPluginsSharingRenders(renders: RunCache) {
  const sharedRenders = definePlugin({
    ...omniSandbox,
    provides: {
      "omni.generate": (host: CapabilityHost) =>
        omniSandbox.provides["omni.generate"](hostSharingRenders(host, renders)),
    },
  });
  return OMNI_PLUGINS.map((p) => (p === omniSandbox ? sharedRenders : p));
}

/** The spec's per-minute limits (10 submits, 60 polls) would stop these tests, not the code they test. */
export const OMNI_LIMITS = {
  inflight_jobs: 50,
  rate_limits: Object.fromEntries(
    [
      "POST /omni/characters",
      "GET /omni/characters",
      "DELETE /omni/characters/<id>",
      "POST /omni/voices",
      "GET /omni/voices",
      "DELETE /omni/voices/<id>",
      "POST /omni/video",
      "GET /omni/video/<job_id>",
      "GET /omni/videos",
      "POST /omni/script-runner",
      "GET /omni/script-runner/<batch_id>",
      "GET /omni/script-runner",
      "POST /omni/improve-prompt",
      "GET /credits",
    ].map((row) => [row, 100_000]),
  ),
};

/** The kernel's options (also for test/helpers/kernel-suite.ts): a 20 ms sandbox latency, private URLs, `env`. */
export const omniOptions = (env: Record<string, string> = {}, plugins = OMNI_PLUGINS) => ({
  plugins,
  start: true,
  env: { SANDBOX_LATENCY_MS: "20", PUBLIC_URL: "https://media.example.test", ALLOW_PRIVATE_URLS: "1", ...env },
});

export async function omniKernel(
  backend: { name: string },
  env: Record<string, string> = {},
  plugins = OMNI_PLUGINS,
): Promise<TestKernel> {
  return createTestKernel({
    ...omniOptions(env, plugins),
    databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
  });
}

/**
 * Runs `fn` with a kernel of its own on PGlite (omniKernel with `env`) and a partner of 1000 credits with
 * OMNI_LIMITS; the kernel is closed after it, however it ends.
 */
export async function onPgliteKernel(
  env: Record<string, string>,
  fn: (tk: TestKernel, key: string) => Promise<void>,
): Promise<void> {
  const tk = await omniKernel({ name: "pglite" }, env);
  try {
    const { key } = await tk.partner({ credits: 1000, limits: OMNI_LIMITS });
    await fn(tk, key);
  } finally {
    await tk.close();
  }
}

/** A solid-colour PNG as base64. */
export function png(rgb: [number, number, number], width = 96, height = 128): string {
  const px = new Uint8Array(width * height * 3);
  for (let i = 0; i < px.length; i += 3) px.set(rgb, i);
  return Buffer.from(encodePng(width, height, px, 3)).toString("base64");
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls a status path until `done` holds; the body that ended it. */
export const until = async (
  tk: TestKernel,
  key: string,
  path: string,
  done: (body: any) => boolean,
  timeoutMs = 180_000,
) => (await pollStatus(tk, key, path, done, timeoutMs)).body;

export const videoDone = (tk: TestKernel, key: string, jobId: string) => until(tk, key, `/omni/video/${jobId}`, ended);

/** Submits a 4 s 16:9 clip (answered 202) and waits for its end: the status answer. */
export async function finishedClip(tk: TestKernel, key: string, prompt: string, extra: Record<string, unknown> = {}) {
  const res = await tk.request("POST", "/omni/video", {
    key,
    body: { prompt, duration: 4, aspect_ratio: "16:9", ...extra },
  });
  assert.is(res.status, 202, JSON.stringify(res.body));
  return videoDone(tk, key, res.body.job_id);
}

/** The body of a chat-completions answer (the text plugin's upstream) whose one choice says `content`. */
export const chatCompletion = (content: string) =>
  JSON.stringify({
    id: "chatcmpl-1",
    object: "chat.completion",
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
  });

/** A character of the account, made through the API (33 credits on api_plus10). */
export async function character(
  tk: TestKernel,
  key: string,
  name: string,
  rgb: [number, number, number],
  voiceId?: string,
): Promise<string> {
  const res = await tk.request("POST", "/omni/characters", {
    key,
    body: { name, image_base64: png(rgb), ...(voiceId ? { voice_id: voiceId } : {}) },
  });
  if (res.status !== 201) throw new Error(`character: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.character_id;
}

export async function voice(tk: TestKernel, key: string, name: string, baseVoice: string): Promise<string> {
  const res = await tk.request("POST", "/omni/voices", { key, body: { name, base_voice: baseVoice } });
  if (res.status !== 201) throw new Error(`voice: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.voice_id;
}
