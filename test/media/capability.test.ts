// The kernel provides `media` to the plugins that require it: the engine MEDIA_ENGINE selects, made on
// first use and closed with the kernel; a plugin that did not declare it cannot reach it.
import { readFileSync } from "node:fs";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { definePlugin } from "../../core/plugin.ts";
import { createTestKernel } from "../../testkit/index.ts";

const FIXTURE = new URL("../../../shared/fixtures/media/video1.mp4", import.meta.url);

const user = definePlugin({ name: "mediauser", requires: ["media"] });
const stranger = definePlugin({ name: "stranger" });

const t = suite("media capability");

for (const mode of ["native", "wasm"] as const) {
  t(`MEDIA_ENGINE=${mode} gives the plugin that engine, which probes a real file`, async () => {
    const tk = await createTestKernel({ plugins: [user, stranger], env: { MEDIA_ENGINE: mode } });
    try {
      const media = tk.kernel.capabilitiesFor("mediauser")("media");
      assert.is(media.kind, mode);
      const probe = await media.probe(new Uint8Array(readFileSync(FIXTURE)), "video1.mp4");
      assert.ok(probe.durationSeconds > 0);
      assert.ok(probe.streams.some((s) => s.type === "video"));
      assert.throws(() => tk.kernel.capabilitiesFor("stranger")("media"), /without declaring it in requires/);
    } finally {
      await tk.close();
    }
  });
}

t.run();
