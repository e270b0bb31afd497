// The capabilities the kernel itself provides to every plugin that lists them in `requires`. (The database,
// the plugin's blob store, the queue, pub/sub and the clock are on every context directly, not capabilities.)

import type { MediaEngine } from "../lib/media/index.ts";
import type { OutboundGuard } from "../lib/outbound/index.ts";
import type { ServiceMediaReader } from "../lib/service-media.ts";
import type { Counters } from "./counters.ts";

export type { ServiceMedia } from "../lib/service-media.ts";
export type { Counters, MediaEngine, OutboundGuard, ServiceMediaReader };

/** Names of the kernel's own capabilities, made on first use (a process that never touches media never loads ffmpeg.wasm). */
export const KERNEL_CAPABILITIES = ["counters", "media", "outbound", "service-media"] as const;
export type KernelCapability = (typeof KERNEL_CAPABILITIES)[number];

declare module "./index.ts" {
  interface CapabilityMap {
    /** Shared counters (Redis when configured): rate windows, quotas and shared slots across processes. */
    counters: Counters;
    /** ffmpeg (native or wasm) and libvips behind one interface. */
    media: MediaEngine;
    /** The outbound-URL guard (docs/architecture.md invariant 6): every URL the service fetches or calls goes through it. */
    outbound: OutboundGuard;
    /** Our own media URLs read back from storage ("a service image URL is read from storage"). */
    "service-media": ServiceMediaReader;
  }
}
