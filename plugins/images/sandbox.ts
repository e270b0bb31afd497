// The sandbox image provider: a real PNG at the requested pixel size, the same bytes for the same request,
// visibly made from the prompt (colours and shapes seeded by it, and its words drawn on the picture), with
// provenance metadata (EXIF and XMP, as generative providers attach) that `strip_metadata` then removes.
// It submits and polls as a remote service would (lib/sandbox-upstream.ts): the image is painted once
// SANDBOX_LATENCY_MS has passed, and polls before that report progress by the time elapsed.
//
// Markers (DESIGN "Sandbox providers"): `[sandbox:fail]` fails the job; `[sandbox:unsafe]` is a
// content-safety block; `[sandbox:flaky]` fails the first route transiently, so a model with a second
// provider shows its fallback.
import { definePlugin, type GeneratedImage, hasMarker, type ImageGenerationRequest, type ImageProvider, type ImageProviders, inThread, type SandboxRequestStore, sandboxConfig, sandboxUpstream, TransientProviderError, UnsafeContentError } from "mediagate/plugin";
import { paintRequestOf } from "./render.ts";

const RENDER_MODULE = new URL("./render.ts", import.meta.url);

export function sandboxImageProvider(options: { latencyMs: number; store?: SandboxRequestStore }): ImageProviders {
  const provider = (route: string): ImageProvider =>
    sandboxUpstream<ImageGenerationRequest, GeneratedImage>({
      name: `images-sandbox-${route}`,
      latencyMs: options.latencyMs,
      ...(options.store ? { store: options.store } : {}),
      check(req) {
        if (hasMarker(req.prompt, "fail")) throw new Error("sandbox: failure requested by the prompt");
        if (hasMarker(req.prompt, "unsafe")) throw new UnsafeContentError("sandbox: unsafe content requested by the prompt");
        if (hasMarker(req.prompt, "flaky") && route === "primary") throw new TransientProviderError("sandbox: transient failure of the first route");
      },
      async render(req, { signal }) {
        const bytes = await inThread<Uint8Array>(RENDER_MODULE, "renderImage", [paintRequestOf(req)], signal);
        return { bytes, mimeType: "image/png" };
      },
    });
  const routes = { primary: provider("primary"), secondary: provider("secondary") };
  return { route: (name) => routes[name as keyof typeof routes] };
}

/** Provides `image.generate` with the sandbox. A real deployment registers its adapter plugin instead. */
export default definePlugin({
  name: "images-sandbox",
  config: sandboxConfig,
  provides: {
    "image.generate": (host) => sandboxImageProvider({ latencyMs: sandboxConfig.of(host).latencyMs, store: host.blobs.scoped("images-sandbox") }),
  },
});
