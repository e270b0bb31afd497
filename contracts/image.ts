// The `image.generate` capability: what an image provider adapter implements. The images plugin calls it;
// its sandbox (plugins/images/sandbox.ts) or a real upstream adapter provides it, so one replaces the other
// without touching the plugin. Route names ("primary", "secondary") come from the images plugin's model table.
export { TransientProviderError, UnsafeContentError } from "./errors.ts";

import type { ProviderRoutes, UpstreamProvider } from "./upstream.ts";

/** `auto` for models that ignore the field. */
export type ImageBackground = "auto" | "transparent" | "opaque";

export interface ImageGenerationRequest {
  prompt: string;
  /** A model id of the images plugin's table. */
  model: string;
  width: number;
  height: number;
  background: ImageBackground;
  /** Which image of a `quantity` request (0-based): the same request with another index is another picture. */
  index: number;
  /**
   * At most 5. `id` identifies the content (a hash for uploads, the URL otherwise). An uploaded reference
   * is read from storage on demand; a URL must be fetched through the outbound-URL guard.
   */
  references: Array<{ id: string; mimeType: string; read(): Promise<Uint8Array | null> } | { id: string; url: string }>;
}

export interface GeneratedImage {
  bytes: Uint8Array;
  /** Only image/png is produced today; the plugin strips metadata of PNG files losslessly. */
  mimeType: "image/png";
}

/** The image providers by route (contracts/upstream.ts ProviderRoutes). */
export type ImageProviders = ProviderRoutes<ImageProvider>;

/**
 * Submits and polls (contracts/upstream.ts): a job waits for it without holding a slot. A failure is
 * TransientProviderError (try the chain's next route), UnsafeContentError, or any other Error.
 */
export type ImageProvider = UpstreamProvider<ImageGenerationRequest, GeneratedImage>;

declare module "./index.ts" {
  interface CapabilityMap {
    "image.generate": ImageProviders;
  }
}
