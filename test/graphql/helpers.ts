// One of several kernels sharing a Postgres database and a Redis (the cross-instance subscription tests):
// each has its own data directory and role, and reaches the others only through the database and Redis.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../core/config.ts";
import { createKernel, type Kernel } from "../../core/kernel.ts";
import { memoryBlobStore } from "../../storage/blobs.ts";
import { redisCounters } from "../../storage/counters.ts";
import { redisPubSub } from "../../storage/pubsub.ts";

export interface SharedBackends {
  databaseUrl: string;
  redis: string;
  /** Isolates this test's Redis keys from other tests sharing the server. */
  prefix: string;
}

/** Starts a kernel in `role` on the shared database and Redis. */
export async function startSharedInstance(
  backends: SharedBackends,
  role: "all" | "api" | "worker",
  plugins: Parameters<typeof createKernel>[0]["plugins"],
): Promise<Kernel> {
  const { databaseUrl, redis, prefix } = backends;
  const config = loadConfig({
    DATA_DIR: mkdtempSync(join(tmpdir(), "mediagate-gql-")),
    DATABASE_URL: databaseUrl,
    REDIS_URL: redis,
    ROLE: role,
    LOG_LEVEL: "silent",
    SANDBOX_LATENCY_MS: "0",
  });
  const kernel = await createKernel({
    config,
    plugins,
    blobs: memoryBlobStore(),
    counters: redisCounters({ url: redis, prefix }),
    pubsub: redisPubSub({ url: redis, prefix }),
  });
  await kernel.start();
  return kernel;
}
