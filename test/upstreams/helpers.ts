// What the gateway's end-to-end tests share: a kernel's environment routed to the protocol stand-ins
// (testkit/standins/), the providers file naming them, and the wait for an image job's end.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestKernel } from "../../testkit/index.ts";
import type { FalStandIn } from "../../testkit/standins/fal.ts";
import type { ReplicateStandIn } from "../../testkit/standins/replicate.ts";
import { notPending, pollStatus } from "../helpers/poll-status.ts";

/** No sandbox delay, our public URL, and private addresses allowed: the stand-ins listen on 127.0.0.1. */
export const ROUTED_ENV: Readonly<Record<string, string>> = {
  SANDBOX_LATENCY_MS: "0",
  PUBLIC_URL: "https://media.example.test",
  ALLOW_PRIVATE_URLS: "1",
};

/** The running stand-ins a providers file names, as the providers `fal` and `replicate`. */
export interface StandIns {
  fal?: FalStandIn;
  replicate?: ReplicateStandIn;
}

/**
 * Writes a providers file with these routes and a provider for each stand-in given, and answers the variables
 * that load it: PROVIDERS_FILE and the stand-ins' keys (TEST_FAL_KEY, TEST_REPLICATE_TOKEN).
 */
export function providersEnv(standIns: StandIns, routes: Record<string, unknown>): Record<string, string> {
  const { fal, replicate } = standIns;
  const providers = {
    ...(fal ? { fal: { protocol: "fal", base_url: fal.url, key_env: "TEST_FAL_KEY", jwks_url: fal.jwksUrl } } : {}),
    ...(replicate
      ? { replicate: { protocol: "replicate", base_url: replicate.url, key_env: "TEST_REPLICATE_TOKEN" } }
      : {}),
  };
  const file = join(mkdtempSync(join(tmpdir(), "mg-providers-")), "providers.json");
  writeFileSync(file, JSON.stringify({ ...(fal || replicate ? { providers } : {}), routes }));
  return {
    PROVIDERS_FILE: file,
    ...(fal ? { TEST_FAL_KEY: fal.key } : {}),
    ...(replicate ? { TEST_REPLICATE_TOKEN: replicate.token } : {}),
  };
}

/** An image job's end at /image-status (anything but pending). */
export const imageFinished = (tk: TestKernel, key: string, id: string | number) =>
  pollStatus(tk, key, `/image-status/${id}`, notPending, 60_000);
