// mediagate/plugin: the one public entry for plugin authors, ours and third parties' alike. A plugin imports
// from here, its own folder and npm packages, nothing else (test/core/import-boundary.test.ts checks it), so
// the kernel behind this file is free to change. What is exported here is the contract.

export type { BlobStore } from "../contracts/blobs.ts";
// Capability contracts and the typed capability map (declaration-merge `CapabilityMap` to add your own).
export * from "../contracts/index.ts";
export { ApiError } from "../lib/api-error.ts";
// A `captionable.videos` contribution from an area's own records (lib/captionable.ts).
export { type CaptionableSources, captionableRecords } from "../lib/captionable.ts";
// The environment a plugin's child process gets: no secrets of the server's (lib/child-env.ts).
export { type ChildEnvOptions, childEnv } from "../lib/child-env.ts";
export * from "../lib/file-response.ts";
export * from "../lib/formats/index.ts";
// Status and list of a plugin's job records, as video and Omni answer them (lib/job-list.ts).
export { findOwnRecord, isJobId, type JobListQuery, jobListInput, listOwnRecords } from "../lib/job-list.ts";
// An account's library of reusable rows with one stored file each, listed and deleted alike (lib/library.ts).
export { deleteFromLibrary, type LibraryTable, listLibrary } from "../lib/library.ts";
// Libraries: the media engine, the outbound-URL guard, sandbox helpers, HTTP file responses.
export * from "../lib/media/index.ts";
// The outbound guard reaches a plugin only as its `outbound` capability, configured once by the kernel
// (ALLOW_PRIVATE_URLS and the rest): the bare `checkUrl` and `createOutboundGuard` are not exported, so no
// plugin can check or fetch a URL under rules of its own.
export {
  type AddressClass,
  type CheckUrlResult,
  classifyAddress,
  DEFAULT_MAX_BYTES,
  DEFAULT_MAX_URL_LENGTH,
  DEFAULT_TIMEOUT_MS,
  type FetchSourceDeps,
  type FetchSourceRules,
  fetchSource,
  isOutboundError,
  isPublicAddress,
  MAX_HOSTNAME_LENGTH,
  MAX_LABEL_LENGTH,
  OutboundError,
  type OutboundErrorKind,
  type OutboundGuard,
  type OutboundRequest,
  type OutboundResponse,
  type OutboundStream,
  type OutboundTexts,
  outboundToApiError,
  type ReadSourceDeps,
  type ReadSourceRules,
  type ResolvedAddress,
  readSource,
  storedSource,
} from "../lib/outbound/index.ts";
export {
  describeCallFailure,
  errorAnswerDetail,
  redactKey,
  upstreamBaseUrl,
} from "../lib/outbound/upstream-url.ts";
export {
  type ConfigDeclaration,
  ConfigError,
  type ConfigValues,
  type ConfigVariable,
  type ConfigVariables,
  defineConfig,
  type Environment,
  envVar,
  type PluginConfigSource,
  type PluginConfigValues,
} from "../lib/plugin-config.ts";
export * from "../lib/sandbox.ts";
// The MP4 encode arguments every sandbox clip shares (lib/sandbox-mp4.ts).
export { AAC_STEREO_ARGS, FASTSTART_ARGS, generatedClipTags, h264Args, voiceOverBed } from "../lib/sandbox-mp4.ts";
export { type SandboxRequestStore, type SandboxUpstreamOptions, sandboxUpstream } from "../lib/sandbox-upstream.ts";
// Blob names: which keys `/media` serves, and the private folder it never does (docs/architecture.md "Media links").
export { mediaToken, PRIVATE_KEY_PREFIX } from "../lib/service-media.ts";
export { MEGABYTE, megabytes } from "../lib/sizes.ts";
// The three networks' host rules, one table for the social downloader and ad analysis.
export {
  HOSTS,
  type HostRole,
  type HostRule,
  type HostSet,
  type LinkRefusal,
  MAX_URL_LENGTH,
  type Platform,
  parseSocialLink,
  type SocialLink,
} from "../lib/social-links.ts";
// Speech for sandboxes that speak: eSpeak NG, and speech with the time of every word (lib/speech).
export * from "../lib/speech/index.ts";
export type { InferOutput, StandardSchemaV1 } from "../lib/standard-schema.ts";
// CPU-bound JavaScript in a worker thread, so a render never holds the event loop (lib/threads.ts).
export { inThread, ThreadError } from "../lib/threads.ts";
export { pollToEnd } from "../lib/upstream.ts";
// Upstream text (model answers, provider errors, transcript words, titles) cleaned before it is stored (lib/upstream-text.ts).
export { capText, cleanUpstreamJson, cleanUpstreamText, UPSTREAM_TEXT_LIMITS } from "../lib/upstream-text.ts";
// Storage a plugin touches through its context: its migrations and its blob store.
export type { Migration } from "../storage/migrate.ts";
// A plugin's tables declared once: the migration creating them and their kysely row types (`TablesOf`).
export {
  type ColumnOf,
  defineTables,
  type JsonColumn,
  json,
  type RowOf,
  type TableDeclaration,
  type TablesOf,
  tablesMigration,
} from "../storage/record-tables.ts";
export type { Partner } from "./accounts.ts";
export type { Clock } from "./clock.ts";
export type { Config } from "./config.ts";
// Errors, validation, prices, time.
export { badRequest, KERNEL_ERRORS, notFound } from "./errors.ts";
// A `svc-` id never used by any job, batch, character or voice (library rows that are not jobs take theirs here).
export { allocateServiceId } from "./ids.ts";
export {
  type Checked,
  checked,
  defineInput,
  type Fail,
  type FieldDoc,
  field,
  type InputDeclaration,
  type InputField,
  type RawInput,
  shown,
} from "./input.ts";
export type { StateMachine } from "./job-states.ts";
export { oneStepStates, PENDING_SUCCESS_FAILED, QUEUED_PROCESSING_COMPLETE, queuedThen } from "./job-states.ts";
export {
  JobFailure,
  type JobKindDeclaration,
  type JobOutcome,
  type JobRecoverContext,
  type JobRunContext,
  type JobUpdate,
  progressBetween,
} from "./jobs.ts";
export type { JobSubmission, SubmittedJob } from "./ledger.ts";
export type { Logger } from "./log.ts";
// Lists (convention 8) and the typed read model of a plugin's record table joined to its jobs.
export { listPage, type Page, type PageRequest, pageBody, pageShape } from "./paging.ts";
export type { OperationLeases } from "./plugin.ts";
// Declaring a plugin, its operations and its job kinds.
export {
  type CapabilityHost,
  definePlugin,
  type HttpMethod,
  type OperationContext,
  type OperationDeclaration,
  operation,
  type PluginDeclaration,
  type UploadedFile,
} from "./plugin.ts";
export { DEFAULT_CUSTOM_RATE_MISSING, type Price, type PriceLine } from "./pricing.ts";
// The end of a runner's catch around a generation provider: rethrow what the runtime retries, else fail with the area's text.
export { failFromProvider, type ProviderFailureTexts } from "./provider-failure.ts";
export {
  JOB_COLUMNS,
  type JobColumnName,
  type JobColumns,
  type JobRecord,
  type JobRecords,
  type JobRecordsOptions,
  jobRecords,
  type PluginDb,
  type RecordFilter,
  type RecordQuery,
  type RecordTables,
} from "./records.ts";
// Service-wide slots on the shared counters.
export { createSharedSlots, type SharedSlots } from "./shared-slots.ts";
export { formatTimestamp, parseSince, unixSeconds } from "./time.ts";
// The kernel's one answer to "was something only briefly out of reach?" (a lost connection, a time-out, an
// upstream's 5xx/429). A runner that turns errors into a JobFailure rethrows these first
// (`if (ctx.signal.aborted || isTransient(err)) throw err;`): the runtime retries them with back-off and never
// fails or refunds a job for one.
export { isTransient } from "./transient.ts";
export type { AwaitUpstreamOptions } from "./upstream-waits.ts";
export { limitParam, offsetParam, PAGE_BOUNDS, type PageBounds, pageQuery, partnerJobIdField } from "./validation.ts";
