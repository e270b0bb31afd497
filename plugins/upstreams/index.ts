// The `upstreams` plugin (issue 39): a gateway that, when PROVIDERS_FILE is set, provides image.generate,
// video.generate, omni.generate and music.generate in place of the sandboxes (`overrides`) and routes each spec
// model id to the services its file names, in order (routes.ts). Without the file each factory hands back what
// it displaced, unchanged: nothing changes for a deployment without it. With the file, a model without a route
// has no provider: the areas refuse it before any charge with their "not available"/"not configured" answer.
import { definePlugin } from "mediagate/plugin";
import { health, images, music, omni, videos } from "./gateway.ts";
import { upstreamsConfig } from "./providers-file.ts";

export default definePlugin({
  name: "upstreams",
  config: upstreamsConfig,
  requires: ["outbound", "media"],
  provides: {
    "image.generate": images,
    "video.generate": videos,
    "omni.generate": omni,
    "music.generate": music,
  },
  overrides: ["image.generate", "video.generate", "omni.generate", "music.generate"],
  contributes: { "upstream.gateway": health },
});
