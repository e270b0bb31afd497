// Text generation as a capability (`text.generate`, contracts/text.ts: instructions + input in, text out), for
// the areas that rewrite or analyse text: Omni prompt repair, ad analysis. No operations of its own.
// Providers: an OpenAI-compatible chat-completions endpoint when TEXT_GENERATE_URL is set (openai-chat.ts),
// otherwise the deterministic sandbox (sandbox.ts, its tasks in sandbox-tasks.ts). The choice is made once,
// from the configuration the kernel read at boot (config.ts), when the capability is built.
import { definePlugin } from "mediagate/plugin";
import { textConfig } from "./config.ts";
import { openAiChatGenerator } from "./openai-chat.ts";
import { sandboxTextGenerator } from "./sandbox.ts";

export default definePlugin({
  name: "text",
  requires: ["outbound"],
  config: textConfig,
  provides: {
    "text.generate": (host) => {
      const settings = textConfig.of(host);
      return settings.url
        ? openAiChatGenerator({ ...settings, url: settings.url }, host.capability("outbound"))
        : sandboxTextGenerator();
    },
  },
});
