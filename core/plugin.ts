// The plugin contract. A plugin is a value: definePlugin() checks and freezes a declaration and returns it;
// the kernel decides when and how to wire it (see core/registry.ts). Nothing here has side effects.
import type { BlobStore } from "../contracts/blobs.ts";
import type { CapabilityMap, CapabilityName, ContributionMap, ContributionName } from "../contracts/index.ts";
import type { Migration } from "../contracts/migration.ts";
import type { ConfigDeclaration, PluginConfigValues } from "../lib/plugin-config.ts";
import type { PluginDb } from "../lib/records.ts";
import type { InferOutput, StandardSchemaV1 } from "../lib/standard-schema.ts";
import type { PubSub } from "../storage/pubsub.ts";
import type { Queue } from "../storage/queue.ts";
import type { AccountService, Partner } from "./accounts.ts";
import type { Clock } from "./clock.ts";
import type { Config } from "./config.ts";
import type { JobKindDeclaration } from "./jobs.ts";
import type { LeaseDb } from "./leases.ts";
import type { JobSubmission, SubmittedJob } from "./ledger.ts";
import type { Logger } from "./log.ts";
import type { Price } from "./pricing.ts";
import type { RateLimitName, RateWindow } from "./rate-limits.ts";
import type { Webhooks } from "./webhooks.ts";

export type HttpMethod = "GET" | "POST" | "PATCH" | "DELETE";

/** One file part of a multipart body. */
export interface UploadedFile {
  /** The file name the client sent (may be empty); only its extension means anything. */
  filename: string;
  /** The part's declared content type (the client's word, not checked). */
  contentType: string;
  /** The part's bytes: a view into the request body as read (not a copy), so keep it only as long as needed. */
  bytes: Uint8Array;
}

/** What a handler sees. Built per call, scoped to the plugin that declared the operation. */
export interface OperationContext<Input = unknown> {
  requestId: string;
  /** `METHOD /path` in the spec's notation, e.g. `GET /status/<job_id>`. */
  endpoint: string;
  partner: Partner;
  input: Input;
  /** Path parameters, named as in the declared path (`<job_id>` gives `params.job_id`). */
  params: Record<string, string>;
  request: Request;
  /**
   * Configuration, two kinds (a choice, kept here): `config` stays the kernel's own settings (core/config.ts,
   * the same object for every plugin), and a plugin's own declared variables (definePlugin `config`) sit
   * apart in `pluginConfig`, read typed through the declaration: `settings.of(ctx)`. Operations, job kinds
   * and capability factories are declared apart from definePlugin, so the declaration, not the context,
   * carries the type; there is no type argument at each use and no global augmentation. Job runners
   * (JobRunContext) and capability factories (CapabilityHost) get the same two fields.
   */
  config: Config;
  /** This plugin's declared variables as read at boot, by variable name; read them through the declaration's `of`. */
  pluginConfig: PluginConfigValues;
  clock: Clock;
  /** For what the partner must not see (a media tool's error, say): the response carries a sanitized text. */
  log: Logger;
  /** The database; a plugin touches only the kernel's services and its own tables. */
  db: PluginDb;
  /** Standard-basis cost table of every registered plugin (the `costs` object of GET /credits). */
  costs: Readonly<Record<string, unknown>>;
  account: AccountService;
  /** Credits this partner's tier pays for a standard-basis price; a custom account without a rate gets its 400 here. */
  priceFor(price: Price): number;
  /** Charges and records a job in one transaction (invariant 1), holding an in-flight slot when the operation counts. */
  submitJob(submission: JobSubmission): Promise<SubmittedJob>;
  /**
   * Ends a job this operation submitted and worked on synchronously (e.g. a merge): a success keeps the
   * charge, a failure with `refund` returns it, in one transaction. Only this plugin's jobs of this partner.
   */
  finishJob(
    jobId: string,
    finish: { state: string; refund: boolean; error?: string | null; output?: Record<string, unknown> | null },
  ): Promise<void>;
  /** A capability the kernel or some plugin provides (declared in `requires`), typed by `CapabilityMap`. */
  capability<K extends CapabilityName>(name: K): CapabilityMap[K];
  /**
   * Every contribution to a named collection (declared in `collects`), in registration order; empty when no
   * registered plugin contributes. Typed by `ContributionMap`.
   */
  contributions<K extends ContributionName>(name: K): readonly ContributionMap[K][];
  blobs: BlobStore;
  pubsub: PubSub;
  queue: Queue;
  /** The public capability URL (`$PUBLIC_URL/media/...`) of a key in this plugin's blob store. */
  mediaUrl(key: string): string;
  /** File parts of a multipart body, by field name (empty for JSON bodies and for GraphQL). See `multipart`. */
  files: Readonly<Record<string, UploadedFile>>;
  /** The raw body of an operation that declares `rawBody` (null for every other operation). */
  body: Uint8Array | null;
  /** Whether an operator paused this service-wide switch (one the plugin declares in `pauses`). */
  isPaused(name: string): Promise<boolean>;
  /** Answer with this status instead of the declared one (e.g. 200 for an idempotent replay of a 202). */
  setStatus(status: 200 | 201 | 202): void;
  /** The account's webhook settings and deliveries (events themselves come from job kinds' `events`). */
  webhooks: Webhooks;
  /** Leases of this process (core/leases.ts): work that must be taken over when its process dies. */
  leases: OperationLeases;
}

/**
 * "This process works on `key`" (core/leases.ts): held while the process lives (its heartbeat renews it),
 * expired LEASE_SECONDS after it died. Keys are global: prefix them with the plugin's name.
 */
export interface OperationLeases {
  /** Takes the lease (in a transaction, usually the one that starts the work); false when a live owner holds it. */
  take(trx: LeaseDb, key: string): Promise<boolean>;
  release(db: LeaseDb, key: string): Promise<void>;
  /** Whether a live owner holds it; pass the transaction when asking inside one (PGlite has one connection). */
  isHeld(key: string, db?: LeaseDb): Promise<boolean>;
}

export interface OperationDeclaration<S extends StandardSchemaV1 | undefined = StandardSchemaV1 | undefined> {
  method: HttpMethod;
  /** Relative to /api/v1/partner, in the spec's notation: `/image-status/<id>`. */
  path: string;
  /** Row of the spec's rate-limit table (or of the plugin's own `rateLimits`); defaults to `METHOD path`. */
  rateLimit?: RateLimitName | (string & {});
  /** Counts against the account's in-flight job cap. */
  inflight?: boolean;
  /** Feature switch that must be on for the account. */
  feature?: string;
  /** Body (POST/PATCH) or query (GET/DELETE) schema; its first issue's message is the 400 text. */
  input?: S;
  /**
   * Shape of the success body (without `request_id`), a Standard Schema value. Not used to validate at run
   * time; it types the GraphQL result and documents the response in schema/openapi.json.
   */
  output?: StandardSchemaV1;
  /** Body cap checked before parsing, and the 413 text. Default 1 MB, KERNEL_ERRORS.bodyTooLarge. */
  maxBodyBytes?: number;
  bodyTooLarge?: string;
  /**
   * The operation's own answer to a body that is not JSON (another Content-Type, or a non-empty body without
   * one), where the spec gives one: 400 with this text. Without it, such a body answers the kernel's 415
   * (KERNEL_ERRORS.unsupportedContentType). A body that says JSON but does not parse is the 400
   * `Request body must be JSON` either way.
   */
  bodyNotJson?: string;
  /**
   * Accept `multipart/form-data` as well as JSON. The input object `input` validates is built from the form's
   * text: the field named by `parameters` holds a JSON object (parsed, then validated exactly as a JSON body
   * is), and each text field named in `fields` becomes the input property of that name, its value the plain
   * string sent (`style` sent as JSON text stays text: the input's check parses it). A field named in both
   * ways is taken from `fields`. The named file parts reach the handler as `ctx.files`; other parts are
   * ignored. With this set, a body that is neither JSON nor multipart answers 415 `unsupportedType`.
   */
  multipart?: {
    parameters?: string;
    fields?: readonly string[];
    files: readonly string[];
    unsupportedType: string;
    /** Cap of a multipart body and its 413 text (a JSON body keeps `maxBodyBytes`). */
    maxBytes: number;
    tooLarge: string;
    /** The 400 of a body that says multipart but cannot be read as such. */
    malformed: string;
  };
  /**
   * The body is bytes, not an input object: a body whose media type is one of `contentTypes` is read, with
   * its own cap, and reaches the handler as `ctx.body` (the input object is then `{}`; path parameters
   * carry the rest). Any other Content-Type answers 415 `unsupportedType` before the body is read; a body
   * that declares or streams more than `maxBytes` answers `tooLargeStatus` (413 unless said otherwise)
   * with `tooLarge`, counted while it streams, so an oversized chunked body is refused without being read
   * whole. The body is held in memory once read: keep `maxBytes` to what one request may hold (a part of a
   * chunked upload, not the upload). GraphQL cannot carry bytes: there the operation answers the 415.
   */
  rawBody?: {
    contentTypes: readonly string[];
    maxBytes: number;
    /** The over-cap text, or a function of the path parameters (which part of an upload was too large). */
    tooLarge: string | ((params: Readonly<Record<string, string>>) => string);
    tooLargeStatus?: 400 | 413;
    unsupportedType: string;
  };
  /**
   * Request headers the operation requires, checked before the body is read (so a refused upload is not
   * read at all): a missing or non-matching header answers 400 with its message.
   */
  requiredHeaders?: Readonly<Record<string, { pattern: RegExp; message: string }>>;
  /**
   * `kernel` (default for POST): the kernel's Idempotency-Key rule (core/idempotency.ts) on every job this
   * operation creates. `own`: the operation has a rule of its own for the header (POST /extend-music).
   */
  idempotency?: "kernel" | "own";
  /**
   * The answer to an Idempotency-Key retry whose first request died before answering (its process's lease
   * expired; core/idempotency.ts): rebuilt from the job that request created, in its current state. Default:
   * 200 `{request_id, job_id, status, error, credits_used}`.
   */
  replay?(ctx: {
    db: PluginDb;
    partnerId: string;
    jobId: string;
    requestId: string;
    mediaUrl(key: string): string;
  }): Promise<{ status: number; body: Record<string, unknown> } | null>;
  /** Success status: 200 (default), 201 or 202. */
  status?: 200 | 201 | 202;
  summary?: string;
  handle(
    ctx: OperationContext<S extends StandardSchemaV1 ? InferOutput<S> : undefined>,
  ): Promise<Record<string, unknown> | Response>;
}

export interface PluginDeclaration {
  /** Prefixes the plugin's tables, queues, blob keys and GraphQL names. */
  name: string;
  /**
   * The plugin-API range this plugin was written for, e.g. `"^1.0"` (core/plugin-version.ts: `^MAJOR`,
   * `^MAJOR.MINOR`, `MAJOR.x`, or an exact version). The kernel refuses, by name, a plugin whose range this
   * mediagate's PLUGIN_API_VERSION does not satisfy; a plugin without `apiVersion` is accepted unchecked.
   */
  apiVersion?: string;
  /** Capabilities that must be provided by the kernel or an earlier plugin; boot fails by name otherwise. */
  requires?: readonly CapabilityName[];
  /** Capabilities this plugin provides, built once at boot; each factory answers its contract's interface. */
  provides?: { readonly [K in CapabilityName]?: (host: CapabilityHost) => CapabilityMap[K] };
  /**
   * Capabilities this plugin provides in place of another registered plugin that provides them too (an
   * upstream adapter registered beside the sandbox it replaces): this plugin's factory is used, the other's
   * is never called, wherever either stands in the list. Each must also be in `provides`. Without it, two
   * providers of one capability stop the boot naming both; two plugins overriding one capability do too.
   */
  overrides?: readonly CapabilityName[];
  /**
   * This plugin's part of named collections (`ContributionMap`), built once at boot. Unlike a capability, which
   * has one provider, any number of plugins may contribute to one collection (captionable videos: each area
   * answers for its own job ids); a reader gets them all, and none is an empty collection, not a boot error.
   */
  contributes?: { readonly [K in ContributionName]?: (host: CapabilityHost) => ContributionMap[K] };
  /** Collections this plugin reads with `contributions(name)` (it may read what it contributes to without this). */
  collects?: readonly ContributionName[];
  /** Standard-basis fragment of the `costs` object of GET /credits. */
  costs?: Readonly<Record<string, unknown>>;
  /**
   * Rate limits of operations the spec does not list (third-party areas), shaped like core/rate-limits.ts.
   * A row the spec already has cannot be redeclared.
   */
  rateLimits?: Readonly<Record<string, readonly RateWindow[]>>;
  /** Feature switches this plugin honours (admin `features` accepts only registered ones). */
  features?: readonly string[];
  /** Service-wide pause switches this plugin honours (core/pauses.ts; the admin API flips registered ones). */
  pauses?: readonly string[];
  /**
   * The environment variables this plugin reads (`defineConfig`, core/config.ts), read and checked at boot;
   * its contexts get them as `pluginConfig`. Plugins declaring one variable must share its declaration.
   */
  config?: ConfigDeclaration;
  operations?: readonly OperationDeclaration<any>[];
  /** Job kinds, by name: their states, legal transitions, terminal states and runner (core/jobs.ts). */
  jobs?: Readonly<Record<string, JobKindDeclaration<any>>>;
  migrations?: readonly Migration[];
}

/** What a capability factory may use. */
export interface CapabilityHost {
  config: Config;
  /** The providing plugin's declared variables (see OperationContext `config`). */
  pluginConfig: PluginConfigValues;
  clock: Clock;
  /** The whole blob store; a capability that keeps files uses `blobs.scoped(<its plugin>)`. */
  blobs: BlobStore;
  capability<K extends CapabilityName>(name: K): CapabilityMap[K];
  /**
   * For a factory of a capability its plugin `overrides`: what the displaced plugin provides, built on this
   * call (an adapter that serves some routes itself and hands the others to the sandbox it replaced).
   * Undefined when nothing was displaced, or for a capability this plugin does not override.
   */
  replaced<K extends CapabilityName>(name: K): CapabilityMap[K] | undefined;
  /** The public capability URL of a key in a plugin's blob store. */
  mediaUrl(plugin: string, key: string): string;
  /**
   * A link to one file of a plugin's blob store, private ones included, that works for `ttlSeconds` (1 s to a
   * day): `mediaUrl` plus `?expires=<unix>&signature=<hmac>` (lib/signed-media.ts). Absent on hand-made hosts.
   */
  signedMediaUrl?: (plugin: string, key: string, ttlSeconds: number) => string;
  /** The kernel's logger (a factory's boot line: which providers it found). Absent on hand-made hosts. */
  log?: Logger;
}

const PLUGIN_NAME = /^[a-z][a-z0-9-]{0,39}$/;

export function definePlugin<const P extends PluginDeclaration>(declaration: P): Readonly<P> {
  if (!PLUGIN_NAME.test(declaration.name)) {
    throw new Error(`plugin name "${declaration.name}" must be lowercase letters, digits and dashes`);
  }
  return Object.freeze({ ...declaration });
}

/** Declares one operation; the identity function, there for the input type to flow into `handle`. */
export function operation<S extends StandardSchemaV1 | undefined = undefined>(
  declaration: OperationDeclaration<S>,
): OperationDeclaration<S> {
  return Object.freeze({ ...declaration });
}
