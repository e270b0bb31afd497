// The `image.generate` capability: what an image provider adapter implements. The images plugin calls it;
// the sandbox (sandbox.ts) or a real upstream adapter provides it, so one replaces the other without
// touching the plugin. Route names ("primary", "secondary") come from the model table.
import type { Background, ModelId } from "./models.ts";

export interface ImageGenerationRequest {
  prompt: string;
  model: ModelId;
  width: number;
  height: number;
  background: Background;
  /** Which image of a `quantity` request (0-based): the same request with another index is another picture. */
  index: number;
  /**
   * At most 5. `id` identifies the content (a hash for uploads, the URL otherwise). An uploaded reference
   * is read from storage on demand; a URL must be fetched through the outbound-URL guard.
   */
  references: Array<{ id: string; mimeType: string; read(): Promise<Uint8Array | null> } | { id: string; url: string }>;
  signal: AbortSignal;
  /** 0-1. */
  onProgress(fraction: number): Promise<void> | void;
}

export interface GeneratedImage {
  bytes: Uint8Array;
  /** Only image/png is produced today; the plugin strips metadata of PNG files losslessly. */
  mimeType: "image/png";
}

/** A failure worth trying on the next provider of the model's chain (timeouts, 5xx, overload). */
export class TransientProviderError extends Error {}
/** The provider refused the prompt on content-safety grounds. */
export class UnsafeContentError extends Error {}

export interface ImageProviders {
  /** The provider behind a route, or undefined when none is configured for it. */
  route(name: string): ImageProvider | undefined;
}

export interface ImageProvider {
  generate(request: ImageGenerationRequest): Promise<GeneratedImage>;
}
