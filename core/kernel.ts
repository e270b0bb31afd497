// The kernel: compiles the plugins, opens the adapters the configuration asks for, and hands each request
// a context built from them. It knows no plugin by name.
import { Accounts } from "./accounts.ts";
import { type Clock, systemClock } from "./clock.ts";
import type { Config } from "./config.ts";
import { chargeAndCreateJob, finishJob, type FinishJob, type FinishedJob } from "./ledger.ts";
import { createLogger, type Logger } from "./log.ts";
import type { CapabilityHost, PluginDeclaration } from "./plugin.ts";
import { createRateLimiter } from "./rate-limit.ts";
import { BootError, compileRegistry, type Registry } from "./registry.ts";
import { UsageRecorder } from "./usage.ts";
import { fileBlobStore, type BlobStore } from "../storage/blobs.ts";
import { memoryCounters, redisCounters, type Counters } from "../storage/counters.ts";
import { openDatabase, type Database } from "../storage/db.ts";
import { migrate } from "../storage/migrate.ts";
import { kernelMigrations } from "../storage/migrations/kernel.ts";
import { memoryPubSub, redisPubSub, type PubSub } from "../storage/pubsub.ts";
import { createQueue, type Queue } from "../storage/queue.ts";

export interface KernelOptions {
  config: Config;
  plugins: readonly PluginDeclaration[];
  /** Adapters a caller (the test kit) supplies instead of the configured ones. */
  database?: Database;
  blobs?: BlobStore;
  counters?: Counters;
  pubsub?: PubSub;
  clock?: Clock;
  logger?: Logger;
}

export interface Kernel {
  config: Config;
  registry: Registry;
  database: Database;
  blobs: BlobStore;
  counters: Counters;
  pubsub: PubSub;
  queue: Queue;
  clock: Clock;
  log: Logger;
  accounts: Accounts;
  usage: UsageRecorder;
  limiter: ReturnType<typeof createRateLimiter>;
  capability<T = unknown>(name: string): T;
  /** Ends a job: terminal state, refund if asked, slot released; exactly once. */
  finishJob(jobId: string, finish: FinishJob): Promise<FinishedJob | null>;
  chargeAndCreateJob: (req: Parameters<typeof chargeAndCreateJob>[1]) => ReturnType<typeof chargeAndCreateJob>;
  /** Starts background work: queue, usage flushing. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export async function createKernel(options: KernelOptions): Promise<Kernel> {
  const { config } = options;
  // Compile first: a broken declaration fails before any connection is opened.
  const registry = compileRegistry(options.plugins);
  const clock = options.clock ?? systemClock;
  const log = options.logger ?? createLogger(config.logLevel);

  const database = options.database ?? (await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir }));
  const closers: Array<() => Promise<unknown>> = [];
  if (!options.database) closers.push(() => database.close());
  try {
    await migrate(database.kysely, [...kernelMigrations, ...registry.migrations]);

    const counters = options.counters ?? (config.redisUrl ? redisCounters({ url: config.redisUrl, prefix: "mg:" }) : memoryCounters(() => clock.now()));
    if (!options.counters) closers.unshift(() => counters.close());
    const pubsub = options.pubsub ?? (config.redisUrl ? redisPubSub({ url: config.redisUrl, prefix: "mg:" }) : memoryPubSub());
    if (!options.pubsub) closers.unshift(() => pubsub.close());
    const blobs = options.blobs ?? fileBlobStore(config.dataDir);
    const queue = createQueue(
      database.kind === "pglite" ? { kind: "pglite", pglite: database.pglite! } : { kind: "postgres", connectionString: database.connectionString! },
      { onError: (err) => log.error("queue error", err) },
    );

    const usage = new UsageRecorder(database.kysely, clock);
    const accounts = new Accounts(database.kysely, clock, pubsub, usage);
    const limiter = createRateLimiter(counters, () => clock.now());

    const built = new Map<string, unknown>();
    const capability = <T,>(name: string): T => {
      if (built.has(name)) return built.get(name) as T;
      const provider = registry.providers.get(name);
      if (!provider) throw new BootError(`capability "${name}" is not provided by any registered plugin`);
      const value = provider.provides![name]!(host);
      built.set(name, value);
      return value as T;
    };
    const host: CapabilityHost = { config, clock, blobs, capability };
    // Build every capability now, in registry order, so a failing factory stops the boot by name.
    for (const name of registry.providers.keys()) capability(name);

    let unlisten: (() => Promise<void>) | undefined;
    let started = false;
    const kernel: Kernel = {
      config,
      registry,
      database,
      blobs,
      counters,
      pubsub,
      queue,
      clock,
      log,
      accounts,
      usage,
      limiter,
      capability,
      async finishJob(jobId, finish) {
        const done = await finishJob(database.kysely, jobId, finish);
        if (done && done.creditsRefunded > 0) await accounts.changed(done.partnerId);
        return done;
      },
      async chargeAndCreateJob(req) {
        const job = await chargeAndCreateJob(database.kysely, req);
        if (job.creditsUsed > 0) await accounts.changed(req.partnerId);
        return job;
      },
      async start() {
        if (started) return;
        started = true;
        unlisten = await accounts.listen();
        usage.start();
        await queue.start();
      },
      async stop() {
        if (started) {
          await queue.stop().catch((err) => log.error("queue stop failed", err));
          await usage.stop().catch((err) => log.error("usage flush failed", err));
          await unlisten?.();
        }
        for (const close of closers) await close().catch((err) => log.error("close failed", err));
      },
    };
    return kernel;
  } catch (err) {
    for (const close of closers) await close().catch(() => {});
    throw err;
  }
}
