// Benchmark: one ad analysis of a 30 s 720x1280 spoken ad, wall time by stage (download, frames, transcript,
// writing), on the native and the wasm engine. The stages are timed from the job's own state changes
// (`jobUpdates`), through the kernel as a partner would run it. The extractor hands out an ad rendered before
// the clock starts (the sandbox's renderer, 30 s instead of its usual 8-12), so "download" is the storing of the
// file, not its making. Baselines in the same run: the ad's length (ratio = stage time / 30 s) and, for the
// frames stage, a bare decode of the same file on the same engine (frames / decode). Each engine analyzes the
// ad twice: with the speech record the sandbox keeps (what a sandbox deployment does), and without it, so the
// transcript comes from offline recognition (pocketsphinx, when installed) as for a real network's ad. Each
// engine runs in its own child process so its peak RSS is its own.
// Run: npx tsx test/bench/analysis.bench.ts
import process from "node:process";
import { definePlugin, type ExtractedPost, type SocialExtractor } from "../../core/plugin-api.ts";
import { createMediaEngine, detectNativeFfmpeg } from "../../lib/media/index.ts";
import account from "../../plugins/account/index.ts";
import analysis from "../../plugins/analysis/index.ts";
import captions from "../../plugins/captions/index.ts";
import { makeSandboxAd } from "../../plugins/social/sandbox-ad.ts";
import text from "../../plugins/text/index.ts";
import video from "../../plugins/video/index.ts";
import videoSandbox from "../../plugins/video/sandbox.ts";
import { createTestKernel, graphqlSubscription } from "../../testkit/index.ts";
import { childEngine, runEngineChild } from "./engine-child.ts";

type Mode = "native" | "wasm";
const SECONDS = 30;
const STAGES = ["downloading", "extracting_frames", "transcribing", "analyzing"] as const;
interface Run {
  transcript: "record" | "recognized";
  stages: Record<(typeof STAGES)[number], number>;
  totalMs: number;
}
interface Result {
  mode: Mode;
  runs: Run[];
  decodeMs: number;
  peakRssMb: number;
}

async function runEngine(mode: Mode): Promise<void> {
  const engine = createMediaEngine({ mode });
  await engine.warmup();
  const ad = await makeSandboxAd(engine, {
    seed: "bench-ad",
    seconds: SECONDS,
    width: 720,
    height: 1280,
    title: "Bench ad",
    audio: true,
  });
  const t0 = performance.now();
  await engine.run(["-i", "ad.mp4", "-map", "0:v", "-f", "framecrc", "decode.txt"], {
    inputs: { "ad.mp4": ad.video },
    outputs: ["decode.txt"],
  });
  const decodeMs = performance.now() - t0;
  await engine.close();

  // A link whose path says "recognized" gets the ad without its speech record.
  const extractor: SocialExtractor = {
    extract: async (req): Promise<ExtractedPost> => ({
      title: "Bench ad",
      uploader: "bench",
      items: [{ video: ad.video, cover: null, spoken: req.url.includes("recognized") ? null : ad.spoken }],
    }),
  };
  const benchExtractor = definePlugin({ name: "bench-extractor", provides: { "social.extract": () => extractor } });
  const tk = await createTestKernel({
    plugins: [account, videoSandbox, video, captions, text, benchExtractor, analysis],
    start: true,
    env: { MEDIA_ENGINE: mode, SANDBOX_LATENCY_MS: "0" },
  });
  try {
    const { key } = await tk.partner({ credits: 1000 });
    const runs: Run[] = [];
    for (const transcript of ["record", "recognized"] as const) {
      const sub = await tk.request("POST", "/analyze", {
        key,
        body: { url: `https://www.tiktok.com/@bench/video/${transcript}` },
      });
      if (sub.status !== 202) throw new Error(JSON.stringify(sub.body));
      const entered: Record<string, number> = {};
      const started = performance.now();
      for await (const r of graphqlSubscription(
        tk,
        "subscription($id: String!) { jobUpdates(id: $id) { state terminal error } }",
        { id: sub.body.job_id },
        { key },
      )) {
        const u = r.data.jobUpdates;
        entered[u.state] ??= performance.now();
        if (u.terminal) {
          if (u.state !== "complete") throw new Error(`ended ${u.state}: ${u.error}`);
          break;
        }
      }
      const order = [...STAGES, "complete"];
      const stages = Object.fromEntries(
        STAGES.map((st, i) => [st, entered[order[i + 1]!]! - (entered[st] ?? started)]),
      ) as Run["stages"];
      runs.push({ transcript, stages, totalMs: entered.complete! - started });
    }
    const result: Result = { mode, runs, decodeMs, peakRssMb: process.resourceUsage().maxRSS / 1024 };
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    await tk.close();
  }
}

const child = childEngine();
if (child) {
  await runEngine(child);
} else {
  const modes: Mode[] = detectNativeFfmpeg() ? ["native", "wasm"] : ["wasm"];
  const results: Result[] = [];
  for (const mode of modes) results.push(await runEngineChild<Result>(import.meta.url, mode));
  const s = (ms: number) => (ms / 1000).toFixed(2).padStart(7);
  console.log(
    `Ad analysis of a ${SECONDS} s 720x1280 spoken ad, by stage (seconds; ratio = stage / ${SECONDS} s of ad)`,
  );
  console.log(
    "engine   transcript   download   frames   transcript   writing    total   frames/bare decode   peak RSS MB",
  );
  for (const r of results) {
    for (const run of r.runs) {
      const st = run.stages;
      console.log(
        `${r.mode.padEnd(8)} ${run.transcript.padEnd(11)} ${s(st.downloading)}   ${s(st.extracting_frames)}  ${s(st.transcribing)}      ${s(st.analyzing)}  ${s(run.totalMs)}   ${(st.extracting_frames / r.decodeMs).toFixed(2).padStart(8)} (${s(r.decodeMs)} s)   ${r.peakRssMb.toFixed(0)}`,
      );
      console.log(
        `                      ratio ${STAGES.map((x) => (st[x] / 1000 / SECONDS).toFixed(3)).join(" / ")}, total ${(run.totalMs / 1000 / SECONDS).toFixed(3)}`,
      );
    }
  }
  if (results.length === 2) {
    for (const [i, run] of results[0]!.runs.entries()) {
      const w = results[1]!.runs[i]!;
      console.log(
        `wasm/native (${run.transcript}): total ${(w.totalMs / run.totalMs).toFixed(2)}, frames ${(w.stages.extracting_frames / run.stages.extracting_frames).toFixed(2)}, transcript ${(w.stages.transcribing / run.stages.transcribing).toFixed(2)}`,
      );
    }
  }
}
