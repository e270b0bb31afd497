// Benchmark: a 20-scene Script Runner run's wall time with the sandbox latency at its default (2000 ms per
// frame and per clip), scenes rendered SCRIPT_RUNNER_SCENES_AT_ONCE at a time (default 4), against the same run
// with one scene at a time (the sum of its scenes run one after another) in the same process: the parallel
// speed-up. Native ffmpeg when present. Run: npx tsx test/bench/script-runner.bench.ts  (SCENES=20, AT_ONCE=4)
import process from "node:process";
import account from "../../plugins/account/index.ts";
import { encodePng } from "../../plugins/images/png.ts";
import imagesSandbox from "../../plugins/images/sandbox.ts";
import scriptRunner from "../../plugins/script-runner/index.ts";
import videoSandbox from "../../plugins/video/sandbox.ts";
import { createTestKernel } from "../../testkit/index.ts";

const SCENES = Number(process.env.SCENES ?? 20);
const AT_ONCE = process.env.AT_ONCE ?? "4";
const px = new Uint8Array(64 * 96 * 3).fill(140);
const image = Buffer.from(encodePng(64, 96, px, 3)).toString("base64");
const prompt = Array.from(
  { length: SCENES },
  (_, i) => `=== SCENE: S${i + 1} ===\nA street at hour ${i + 1}.\n=== DIALOGUE ${i + 1} ===\nLine ${i + 1}.`,
).join("\n");

async function runOnce(atOnce: string): Promise<number> {
  const tk = await createTestKernel({
    plugins: [account, imagesSandbox, videoSandbox, scriptRunner],
    start: true,
    env: { SANDBOX_LATENCY_MS: "2000", SCRIPT_RUNNER_SCENES_AT_ONCE: atOnce },
  });
  try {
    const { key } = await tk.partner({
      credits: 100_000,
      limits: { rate_limits: { "GET /script-runner/<job_id>": 100_000 } },
    });
    const t0 = performance.now();
    const res = await tk.request("POST", "/script-runner", { key, body: { prompt, character_image_base64: image } });
    if (res.status !== 202) throw new Error(JSON.stringify(res.body));
    for (;;) {
      const r = await tk.request("GET", `/script-runner/${res.body.job_id}`, { key });
      if (r.body.status !== "processing") {
        if (r.body.status !== "complete") throw new Error(JSON.stringify(r.body).slice(0, 300));
        return (performance.now() - t0) / 1000;
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  } finally {
    await tk.close();
  }
}

const parallel = await runOnce(AT_ONCE);
const sequential = await runOnce("1");
console.log(`Script Runner, ${SCENES} scenes, sandbox latency 2000 ms per frame and per clip`);
console.log(
  `${AT_ONCE} at once: ${parallel.toFixed(1)} s; one at a time (the sum of its scenes): ${sequential.toFixed(1)} s; speed-up ${(sequential / parallel).toFixed(2)}x`,
);
