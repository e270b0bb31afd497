// The kernel: compiles the plugins, opens the adapters the configuration asks for, and hands each request
// a context built from them. It knows no plugin by name.

import type { Kysely } from "kysely";
import type { BlobStore } from "../contracts/blobs.ts";
import type { Counters } from "../contracts/counters.ts";
import type {
  CapabilityMap,
  CapabilityName,
  ContributionMap,
  ContributionName,
  KernelCapability,
} from "../contracts/index.ts";
import { createMediaEngine, createMediaPool, type MediaPool } from "../lib/media/index.ts";
import { createOutboundGuard, type OutboundGuard } from "../lib/outbound/index.ts";
import { ConfigError, type Environment, type PluginConfigValues, readVariables } from "../lib/plugin-config.ts";
import { serviceMediaReader } from "../lib/service-media.ts";
import { signMediaKey } from "../lib/signed-media.ts";
import { isTransient } from "../lib/transient.ts";
import { parseBlobUrl } from "../storage/blob-url.ts";
import { checkS3BlobStore, fileBlobStore, s3BlobStore } from "../storage/blobs.ts";
import { describeRedisUrl, memoryCounters, probeRedis, redisCounters } from "../storage/counters.ts";
import { CONNECT_TIMEOUT_MS, type Database, DatabaseOpenError, openDatabase } from "../storage/db.ts";
import { migrate } from "../storage/migrate.ts";
import { kernelMigrations } from "../storage/migrations/kernel.ts";
import { memoryPubSub, type PubSub, redisPubSub } from "../storage/pubsub.ts";
import { createQueue, type Queue } from "../storage/queue.ts";
import type { KernelTables } from "../storage/tables.ts";
import { Accounts } from "./accounts.ts";
import { type Clock, systemClock } from "./clock.ts";
import { type Config, environmentOf } from "./config.ts";
import { createIdempotencyStore, type IdempotencyStore } from "./idempotency.ts";
import {
  type FinishedJob,
  type FinishJob,
  type FinishPlan,
  finishJob,
  type JobServices,
  type SubmitPlan,
  submitJobs,
} from "./job-transactions.ts";
import { compileJobKinds, createJobRuntime, type JobRuntime } from "./jobs.ts";
import { createLeases, type Leases } from "./leases.ts";
import { refundShare, type SubmittedJob } from "./ledger.ts";
import { createLogger, type Logger } from "./log.ts";
import { compileOperations, type OperationTable } from "./operations.ts";
import type { CapabilityHost, PluginDeclaration } from "./plugin.ts";
import { createRateLimiter } from "./rate-limit.ts";
import { BootError, compileRegistry, type Registry } from "./registry.ts";
import { createRetentionSweeper, type RetentionSweeper, retainingBlobStore } from "./retention.ts";
import { UsageRecorder } from "./usage.ts";
import { createWebhooks, TEST_EVENT, type Webhooks } from "./webhooks.ts";

export interface KernelOptions {
  config: Config;
  /**
   * Where the plugins' declared variables are read from. Default: the environment `config` was loaded from
   * (loadConfig remembers it), so one environment configures the kernel and its plugins alike.
   */
  env?: Environment;
  plugins: readonly PluginDeclaration[];
  /** Adapters a caller (the test kit) supplies instead of the configured ones. */
  database?: Database;
  blobs?: BlobStore;
  counters?: Counters;
  pubsub?: PubSub;
  clock?: Clock;
  logger?: Logger;
  /** An outbound-URL guard (tests inject one with a fake DNS resolver). */
  outbound?: OutboundGuard;
}

export interface Kernel {
  config: Config;
  registry: Registry;
  database: Database;
  blobs: BlobStore;
  /** The process's pool for CPU-heavy media work (MEDIA_CONCURRENCY; lib/media/pool.ts), shared by every kind. */
  mediaPool: MediaPool;
  counters: Counters;
  pubsub: PubSub;
  queue: Queue;
  clock: Clock;
  log: Logger;
  accounts: Accounts;
  usage: UsageRecorder;
  limiter: ReturnType<typeof createRateLimiter>;
  /** Every operation compiled once at boot (core/operations.ts): REST and GraphQL call the same invokers. */
  readonly operations: OperationTable;
  capability<K extends CapabilityName>(name: K): CapabilityMap[K];
  /** One plugin's declared variables as read at boot (its contexts' `pluginConfig`). */
  pluginConfig(plugin: string): PluginConfigValues;
  /** The capabilities one plugin may reach: those it requires or provides. */
  capabilitiesFor(plugin: string): <K extends CapabilityName>(name: K) => CapabilityMap[K];
  /** Every contribution to a collection, in registry order (empty when nobody contributes). */
  contributions<K extends ContributionName>(name: K): readonly ContributionMap[K][];
  /** The collections one plugin may read: those it collects or contributes to. */
  contributionsFor(plugin: string): <K extends ContributionName>(name: K) => readonly ContributionMap[K][];
  /** `$PUBLIC_URL/media/<plugin>/<key>`: the capability URL of a blob (transports/rest/media.ts serves it). */
  mediaUrl(plugin: string, key: string): string;
  jobs: JobRuntime;
  /** Webhook settings, events and deliveries (core/webhooks.ts). */
  webhooks: Webhooks;
  /** Idempotency-Key: keys claimed with their job, first responses replayed (core/idempotency.ts). */
  idempotency: IdempotencyStore;
  /** This process's leases on work only it finishes (core/leases.ts); its heartbeat runs once started. */
  leases: Leases;
  /** Removes retained files whose window has passed (core/retention.ts); runs on its own once started. */
  retention: RetentionSweeper;
  /** Ends a job: terminal state, refund if asked, slot released; exactly once. */
  finishJob(jobId: string, finish: FinishJob): Promise<FinishedJob | null>;
  /** Charges and creates jobs with nothing queued (core/job-transactions.ts submitJobs); a plugin's go through `jobs.submit`. */
  chargeAndCreateJob(plan: SubmitPlan): Promise<SubmittedJob>;
  /** Starts background work: queue, usage flushing, and the job workers unless ROLE=api. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export async function createKernel(options: KernelOptions): Promise<Kernel> {
  const { config } = options;
  // Compile first: a broken declaration fails before any connection is opened.
  const registry = compileRegistry(options.plugins);
  const jobKinds = compileJobKinds(registry.plugins, (message) => new BootError(message));
  // The plugins' variables next (loadConfig read the kernel's): a bad value is a ConfigError by name, still
  // before any connection. A Config made without loadConfig and no `env` leaves every variable at its default.
  const configValues = readVariables(
    [...registry.configVariables.values()].map((d) => d.variable),
    options.env ?? environmentOf(config) ?? {},
  );
  const pluginConfigs = new Map(
    registry.plugins.map((p) => [
      p.name,
      Object.freeze(
        Object.fromEntries(Object.values(p.config?.variables ?? {}).map((v) => [v.name, configValues[v.name]])),
      ),
    ]),
  );
  const pluginConfig = (plugin: string): PluginConfigValues => {
    const values = pluginConfigs.get(plugin);
    if (!values) throw new Error(`unknown plugin "${plugin}"`);
    return values;
  };
  const clock = options.clock ?? systemClock;
  const log = options.logger ?? createLogger(config.logLevel);

  // The Redis connections made below retry for ever, and the first command on them would wait as long: an
  // unreachable REDIS_URL is found first, within CONNECT_TIMEOUT_MS and before the (slower) database opens.
  if (config.redisUrl && !(options.counters && options.pubsub)) {
    const url = config.redisUrl;
    await probeRedis(url, CONNECT_TIMEOUT_MS).catch((err: unknown) => {
      throw new BootError(
        `REDIS_URL: cannot reach Redis at ${describeRedisUrl(url)} (${(err as Error).message || String(err)})`,
      );
    });
  }
  // An unreachable or locked database stops the boot as one line naming the variable (BootError), not a stack.
  // A connection the server dropped (a terminated backend, a restart) is logged once, at warn: what it was
  // doing failed with an error of its own, handled where it was made (storage/db.ts).
  const onConnectionLost = (err: Error) =>
    log.warn("database connection lost", { reason: err.message, code: (err as { code?: string }).code });
  const database =
    options.database ??
    (await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir, onConnectionLost }).catch(
      (err: unknown) => {
        throw err instanceof DatabaseOpenError ? new BootError(err.message) : err;
      },
    ));
  const closers: Array<() => Promise<unknown>> = [];
  if (!options.database) closers.push(() => database.close());
  try {
    await migrate(database.kysely, [...kernelMigrations, ...registry.migrations]);

    const counters =
      options.counters ??
      (config.redisUrl ? redisCounters({ url: config.redisUrl, prefix: "mg:" }) : memoryCounters(() => clock.now()));
    if (!options.counters) closers.unshift(() => counters.close());
    const pubsub =
      options.pubsub ?? (config.redisUrl ? redisPubSub({ url: config.redisUrl, prefix: "mg:" }) : memoryPubSub());
    if (!options.pubsub) closers.unshift(() => pubsub.close());
    // Every put with `expiresAt`, whichever plugin makes it, is remembered for the retention sweeper.
    const storedBlobs =
      options.blobs ?? (config.blobUrl ? await openS3Blobs(config.blobUrl) : fileBlobStore(config.dataDir));
    const blobs = retainingBlobStore(storedBlobs, database.kysely);
    // The sweeper removes files from the store underneath, and its rows itself, so a window extended while it
    // runs is respected.
    // Every process heart-beats its leases (any role): synchronous jobs and keyed requests run in API processes.
    const leases = createLeases({
      db: database.kysely,
      log,
      seconds: config.leaseSeconds,
      embedded: database.kind === "pglite",
    });
    const idempotency = createIdempotencyStore(database.kysely, clock, leases);
    // Its pass also forgets idempotency keys past their 24 hours.
    const retention = createRetentionSweeper({
      db: database.kysely,
      blobs: storedBlobs,
      clock,
      log,
      intervalMs: config.retentionSweepMs,
      alsoSweep: () => idempotency.sweep(),
    });
    const queue = createQueue(
      database.kind === "pglite"
        ? { kind: "pglite", pglite: database.pglite! }
        : { kind: "postgres", connectionString: database.connectionString! },
      // Maintenance (which fails attempts whose process died) every 10 s, so a crash costs seconds, not minutes.
      // A poll or maintenance pass that lost its connection is tried again on the next one: a warning, of one
      // line (pg-pool hangs the whole client on a dropped connection's error).
      {
        onError: (err) =>
          isTransient(err)
            ? log.warn("queue error", { reason: (err as Error).message, code: (err as { code?: string }).code })
            : log.error("queue error", err),
        superviseIntervalSeconds: 10,
      },
    );

    const usage = new UsageRecorder(database.kysely, clock);
    const accounts = new Accounts(database.kysely, clock, pubsub, usage);
    const limiter = createRateLimiter(counters, () => clock.now());

    const built = new Map<string, unknown>();
    // Made at once (it is a counter): /metrics reads it in processes that never load an engine.
    const mediaPool = createMediaPool(config.mediaConcurrency);
    // Capabilities the kernel itself provides, made on first use: a process whose plugins never touch media
    // never loads ffmpeg.wasm. (db, blobs, queue, pubsub, counters and clock sit on every context directly.)
    const kernelProvided: { [K in KernelCapability]: () => CapabilityMap[K] } = {
      // Shared counters (Redis when configured): rate windows, quotas and shared slots across processes.
      counters: () => counters,
      media: () => {
        const engine = createMediaEngine({
          mode: config.mediaEngine,
          pool: mediaPool,
          childLimits: config.mediaChildLimits,
        });
        closers.unshift(() => engine.close());
        return engine;
      },
      // Our own media URLs read back from storage ("a service image URL is read from storage").
      "service-media": () => serviceMediaReader(config.publicUrl, blobs),
      // The outbound-URL guard (docs/architecture.md invariant 6): every URL the service fetches or calls goes through it.
      outbound: () => {
        const guard = options.outbound ?? createOutboundGuard({ allowPrivate: config.allowPrivateUrls });
        if (!options.outbound) closers.unshift(() => guard.close());
        return guard;
      },
    };
    const capability = <K extends CapabilityName, T = CapabilityMap[K]>(name: K): T => {
      if (built.has(name)) return built.get(name) as T;
      const own = (kernelProvided as Record<string, (() => unknown) | undefined>)[name];
      if (own) {
        built.set(name, own());
        return built.get(name) as T;
      }
      const provider = registry.providers.get(name);
      if (!provider) throw new BootError(`capability "${name}" is not provided by any registered plugin`);
      const value = buildCapability(provider, name);
      built.set(name, value);
      return value as T;
    };
    /** One plugin's factory of one capability; a factory that throws stops the boot naming both. */
    const buildCapability = (provider: PluginDeclaration, name: string): unknown => {
      const displaced = (provider.overrides as readonly string[] | undefined)?.includes(name)
        ? registry.replaced.get(name)
        : undefined;
      let made: unknown;
      const replaced = ((asked: string) => {
        if (asked !== name || !displaced) return undefined;
        made ??= buildCapability(displaced, name);
        return made;
      }) as CapabilityHost["replaced"];
      return namingFailure(`plugin "${provider.name}" failed to build capability "${name}"`, () =>
        (provider.provides as Record<string, (h: CapabilityHost) => unknown>)[name]!({
          ...host,
          replaced,
          pluginConfig: pluginConfig(provider.name),
        }),
      );
    };
    const mediaBase = `${config.publicUrl.replace(/(?<!\/)\/+$/, "")}/media/`;
    const mediaUrl = (plugin: string, key: string) =>
      mediaBase + [plugin, ...key.split("/")].map(encodeURIComponent).join("/");
    const host: Omit<CapabilityHost, "pluginConfig" | "replaced"> = {
      config,
      clock,
      blobs,
      capability: capability as CapabilityHost["capability"],
      mediaUrl,
      signedMediaUrl: (plugin, key, ttlSeconds) =>
        `${mediaUrl(plugin, key)}?${signMediaKey(config.upstreamCallbackSecret, `${plugin}/${key}`, ttlSeconds, clock.now()).query}`,
      log,
    };
    // Build every capability now, in registry order, so a failing factory stops the boot by name.
    for (const name of registry.providers.keys()) capability(name as CapabilityName);

    const capabilitiesFor = (plugin: string) => {
      const decl = registry.plugins.find((p) => p.name === plugin);
      if (!decl) throw new Error(`unknown plugin "${plugin}"`);
      const allowed = new Set([...(decl.requires ?? []), ...Object.keys(decl.provides ?? {})]);
      // A plugin reaches only the capabilities it declared, so `requires` stays an honest list.
      return <K extends CapabilityName>(name: K): CapabilityMap[K] => {
        if (!allowed.has(name))
          throw new Error(`plugin "${plugin}" uses capability "${name}" without declaring it in requires`);
        return capability(name);
      };
    };
    // Collections: every contributor's part built now, in registry order, after the capabilities it may use
    // (a failing factory stops the boot by name, as a capability's does).
    const collections = new Map<string, readonly unknown[]>();
    for (const [name, plugins] of registry.contributors) {
      collections.set(
        name,
        Object.freeze(
          plugins.map((p) =>
            namingFailure(`plugin "${p.name}" failed to build its part of "${name}"`, () =>
              (p.contributes as Record<string, (h: CapabilityHost) => unknown>)[name]!({
                ...host,
                replaced: () => undefined,
                pluginConfig: pluginConfig(p.name),
              }),
            ),
          ),
        ),
      );
    }
    const contributions = <K extends ContributionName>(name: K): readonly ContributionMap[K][] =>
      (collections.get(name) ?? []) as readonly ContributionMap[K][];
    const contributionsFor = (plugin: string) => {
      const decl = registry.plugins.find((p) => p.name === plugin);
      if (!decl) throw new Error(`unknown plugin "${plugin}"`);
      const allowed = new Set<string>([...(decl.collects ?? []), ...Object.keys(decl.contributes ?? {})]);
      return <K extends ContributionName>(name: K): readonly ContributionMap[K][] => {
        if (!allowed.has(name))
          throw new Error(`plugin "${plugin}" reads collection "${name}" without declaring it in collects`);
        return contributions(name);
      };
    };
    const blobsByPlugin = new Map(registry.plugins.map((p) => [p.name, blobs.scoped(p.name)]));

    const webhooks = createWebhooks({
      db: database.kysely,
      background: database.background,
      pubsub,
      outbound: () => capability("outbound"),
      config,
      clock,
      log,
      embedded: database.kind === "pglite",
      eventNames: [
        ...new Set(
          registry.plugins
            .flatMap((p) => Object.values(p.jobs ?? {}).flatMap((j) => [j.events?.success, j.events?.failure]))
            .filter((e): e is string => !!e),
        ),
        TEST_EVENT,
      ],
    });
    const services: JobServices = { queue, leases, idempotency, webhooks };
    const chargeAndCreate: Kernel["chargeAndCreateJob"] = async (plan) => {
      const job = await submitJobs(database.kysely, plan, services);
      if (job.creditsUsed > 0) await accounts.changed(plan.partnerId);
      return job;
    };
    // On either lane (storage/connection-gate.ts): an operation's own finish is a request's, a runner's is background work.
    const finishOn =
      (db: Kysely<KernelTables>) =>
      async (jobId: string, plan: FinishPlan): Promise<FinishedJob | null> => {
        const done = await finishJob(db, jobId, plan, services);
        if (done && done.creditsRefunded > 0) await accounts.changed(done.partnerId);
        return done;
      };
    const finish = finishOn(database.kysely);
    const jobs = createJobRuntime({
      webhooks,
      db: database.kysely,
      background: database.background,
      queue,
      pubsub,
      log,
      config,
      clock,
      kinds: jobKinds,
      submitJobs: chargeAndCreate,
      finishJob: finishOn(database.background),
      async refundShare(jobId, index) {
        const { partnerId, credits } = await refundShare(database.background, jobId, index);
        if (credits > 0) await accounts.changed(partnerId);
        return credits;
      },
      blobsFor: (plugin) => blobsByPlugin.get(plugin)!,
      capabilitiesFor,
      contributionsFor,
      pluginConfigFor: pluginConfig,
      mediaUrl,
      // Always on for providers that verify the service's own signature; HMAC-signed ones need the secret.
      upstreamCallbacks: { publicUrl: config.publicUrl, secret: config.upstreamCallbackSecret ?? null },
      leases,
    });
    // Each beat, after the renewal: synchronous jobs whose process died are finished or refunded.
    leases.onBeat(() => jobs.recoverOrphans());

    let unlisten: (() => Promise<void>) | undefined;
    let started = false;
    // Compiled right below, from the finished kernel the invokers close over.
    let operations: OperationTable = [];
    const kernel: Kernel = {
      config,
      registry,
      database,
      blobs,
      mediaPool,
      counters,
      pubsub,
      queue,
      clock,
      log,
      accounts,
      usage,
      limiter,
      get operations() {
        return operations;
      },
      capability,
      pluginConfig,
      capabilitiesFor,
      contributions,
      contributionsFor,
      mediaUrl,
      jobs,
      webhooks,
      idempotency,
      leases,
      retention,
      finishJob: finish,
      chargeAndCreateJob: chargeAndCreate,
      async start() {
        if (started) return;
        started = true;
        unlisten = await accounts.listen();
        usage.start();
        await queue.start();
        await leases.start();
        if (config.allowPrivateUrls)
          log.warn(
            "ALLOW_PRIVATE_URLS is on: outbound URLs may reach loopback and private hosts over http (development only)",
          );
        if (config.role !== "api") {
          await jobs.startWorkers();
          await webhooks.startWorkers();
          retention.start();
        }
      },
      async stop() {
        // Unconditional: a send before start() starts the queue too, and it must not outlive the kernel.
        await leases.stop();
        await retention.stop();
        await webhooks.stopWorkers();
        await queue.stop().catch((err) => log.error("queue stop failed", err));
        if (started) {
          await usage.stop().catch((err) => log.error("usage flush failed", err));
          await unlisten?.();
        }
        for (const close of closers) await close().catch((err) => log.error("close failed", err));
      },
    };
    operations = compileOperations(kernel);
    return kernel;
  } catch (err) {
    for (const close of closers) await close().catch(() => {});
    throw err;
  }
}

/** The bucket of BLOB_URL, checked usable (a write and a read) before the kernel relies on it. */
async function openS3Blobs(blobUrl: string): Promise<BlobStore> {
  const location = parseBlobUrl(blobUrl);
  const store = s3BlobStore(location);
  await checkS3BlobStore(location, store).catch((err: Error) => {
    throw new BootError(err.message);
  });
  return store;
}

/** Runs a plugin's factory; what it throws (other than a boot or config error, already named) stops the boot naming it. */
function namingFailure<T>(what: string, factory: () => T): T {
  try {
    return factory();
  } catch (err) {
    if (err instanceof BootError || err instanceof ConfigError) throw err;
    throw new BootError(`${what}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}
