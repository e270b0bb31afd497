// What every sandbox provider shares (DESIGN "Sandbox providers"): SANDBOX_LATENCY_MS spent in abortable
// steps, and the markers that let anyone reach the failure paths.
import { z } from "zod";
import { defineConfig, envVar } from "../core/config.ts";

/**
 * The variable every sandbox provider reads, declared once: a sandbox plugin puts `config: sandboxConfig` in
 * its definePlugin (or spreads `sandboxConfig.variables` into its own defineConfig) and reads
 * `sandboxConfig.of(host).latencyMs`. Plugins declaring one variable must share its declaration.
 */
export const sandboxConfig = defineConfig({
  latencyMs: envVar(
    "SANDBOX_LATENCY_MS",
    z.string().regex(/^\d+$/, "must be a non-negative integer").transform(Number).default(2000),
    "how long a sandbox provider takes, in milliseconds (2000)",
  ),
});

export const SANDBOX_MARKERS = {
  fail: "[sandbox:fail]",
  unsafe: "[sandbox:unsafe]",
  flaky: "[sandbox:flaky]",
  /** The provider refuses the input as unusable (music: `error_code` input_rejected). */
  reject: "[sandbox:reject]",
  /** The provider never answers in time (music: `error_code` timeout). */
  timeout: "[sandbox:timeout]",
} as const;

/** Whether `text` carries the marker. */
export const hasMarker = (text: string, marker: keyof typeof SANDBOX_MARKERS) => text.includes(SANDBOX_MARKERS[marker]);

/** The text without any marker (what a sandbox draws or speaks). */
export const withoutMarkers = (text: string) => text.replace(/\[sandbox:[a-z]+\]/g, "").trim();

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts; leaves no listener behind. */
export function sandboxSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => (clearTimeout(timer), reject(signal.reason));
    const timer = setTimeout(() => (signal.removeEventListener("abort", onAbort), resolve()), ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
