// mediagate/plugin: the one public entry for plugin authors, ours and third parties' alike. A plugin imports
// from here, its own folder and npm packages, nothing else (test/core/import-boundary.test.ts checks it), so
// the kernel behind this file is free to change. What is exported here is the contract.
//
// The list is explicit, name by name (no `export *`), and holds what plugins, examples and their tests use, and
// the declaration types a plugin is written against: a name the kernel or lib/ use only among themselves stays
// internal. Each group below opens with a `// ## Title` line and says what it is for; the API report
// (docs/plugin-api.md, written by `npx tsx scripts/plugin-api-report.ts`) prints every name with its signature
// by group, and test/plugin-api/report.test.ts fails when this surface changes and the report was not
// regenerated, so every change of the contract is a reviewed diff. A change that removes or alters a name is a
// new major PLUGIN_API_VERSION (core/plugin-version.ts); one that only adds is a new minor.

// ## Version
// The version of this contract, apart from the package's, and the range check the kernel applies at boot to a
// plugin's `apiVersion`.

export { PLUGIN_API_VERSION, satisfiesApiRange } from "./plugin-version.ts";

// ## Declaring a plugin
// A plugin, its operations (routes with input, price and handler), what an operation's handler is given, and
// the clock and logger it is handed.

export type { Clock } from "./clock.ts";
export type { Logger } from "./log.ts";
export {
  type CapabilityHost,
  definePlugin,
  type OperationContext,
  type OperationDeclaration,
  type OperationLeases,
  operation,
  type PluginDeclaration,
  type UploadedFile,
} from "./plugin.ts";
export { DEFAULT_CUSTOM_RATE_MISSING, type Price } from "./pricing.ts";

// ## Input and answers
// The input of an operation declared once (documented fields, one ordered check), the errors it answers, and the
// shared field rules (partner_job_id, sizes, timestamps).

export { ApiError } from "../lib/api-error.ts";
export { badRequest, notFound } from "../lib/errors.ts";
export {
  type Checked,
  checked,
  defineInput,
  type Fail,
  field,
  shown,
} from "../lib/input.ts";
export { megabytes } from "../lib/sizes.ts";
export type { InferOutput } from "../lib/standard-schema.ts";
export { formatTimestamp, parseSince } from "../lib/time.ts";
export { partnerJobIdField } from "../lib/validation.ts";

// ## Lists
// Lists as convention 8 pages them, a plugin's own job records by id and status, and libraries of reusable rows
// with one stored file each.

export { findOwnRecord, isJobId, jobListInput, listOwnRecords } from "../lib/job-list.ts";
export { deleteFromLibrary, type LibraryTable, listLibrary } from "../lib/library.ts";
export {
  limitParam,
  listPage,
  offsetParam,
  PAGE_BOUNDS,
  type Page,
  type PageRequest,
  pageBody,
  pageQuery,
  pageShape,
} from "../lib/paging.ts";

// ## Configuration
// A plugin's environment variables, declared with their defaults and checked once at boot.

export { ConfigError, defineConfig, type Environment, envVar } from "../lib/plugin-config.ts";

// ## Storage and records
// A plugin's tables (the migration creating them and their row types), its job records joined to the kernel's
// jobs, its blob store, `svc-` ids for rows that are not jobs, and blob names: which keys `/media` serves, and the
// private folder it never does.

export type { BlobStore } from "../contracts/blobs.ts";
export type { Migration } from "../contracts/migration.ts";
export { defineTables, json, type TablesOf, tablesMigration } from "../lib/record-tables.ts";
export { type JobRecord, jobRecords } from "../lib/records.ts";
export { allocateServiceId } from "../lib/service-ids.ts";
export { mediaToken, PRIVATE_KEY_PREFIX } from "../lib/service-media.ts";

// ## Jobs
// Job kinds, what a runner is given and answers, the state machines areas share, and the end of a runner's catch:
// rethrow what was only briefly out of reach (`if (ctx.signal.aborted || isTransient(err)) throw err;`: the runtime
// retries it with back-off and never fails or refunds a job for one), fail with the area's text otherwise. Also
// polling an upstream job to its end, and service-wide slots on the shared counters.

export { oneStepStates, PENDING_SUCCESS_FAILED, QUEUED_PROCESSING_COMPLETE } from "../lib/job-states.ts";
export { createSharedSlots, type SharedSlots } from "../lib/shared-slots.ts";
export { isTransient } from "../lib/transient.ts";
export { pollToEnd } from "../lib/upstream.ts";
export {
  JobFailure,
  type JobKindDeclaration,
  type JobOutcome,
  type JobRunContext,
  progressBetween,
} from "./jobs.ts";
export { failFromProvider } from "./provider-failure.ts";

// ## Capabilities and collections
// What plugins provide and use, as interfaces: `ctx.capability(name)` is typed by `CapabilityMap` and
// `ctx.contributions(name)` by `ContributionMap`; a plugin adds its own names by declaration merging
// (`declare module "mediagate/plugin" { interface CapabilityMap { "word.count": WordCounter } }`). Then the
// kernel's own capabilities (counters, media, outbound, service-media), each area's contract and the
// `captionable.videos` contribution built from an area's own records.

export {
  AD_ANALYSIS_FIELDS,
  AD_ANALYSIS_TASK,
  type AdAnalysisTexts,
  type AdFacts,
  type CapabilityMap,
  type CaptionableVideo,
  type ContributionMap,
  type Counters,
  type ExtractedItem,
  type ExtractedPost,
  ExtractionError,
  type ExtractRequest,
  type GeneratedImage,
  type GeneratedText,
  type GeneratedVideo,
  type ImageGenerationRequest,
  type ImageOutput,
  type ImageProvider,
  type ImageProviders,
  type ImageRecordRow,
  type ImageRecords,
  type MeasuredColour,
  type MeasuredFrame,
  type MusicControls,
  type MusicErrorCode,
  type MusicExtensionRequest,
  type MusicGenerationRequest,
  type MusicModel,
  type MusicProvider,
  MusicProviderError,
  type MusicProviders,
  type MusicTrack,
  type OmniCharacterSnapshot,
  type OmniGenerationRequest,
  type OmniProvider,
  type OmniReferenceVideo,
  type OmniVoiceSnapshot,
  type PluginDb,
  type ReferenceMedia,
  type ServiceMedia,
  type ServiceMediaReader,
  SOCIAL_LIMITS,
  type SocialExtractor,
  type SocialFailureReason,
  type SocialLimits,
  type SocialPlatform,
  type SpeechAudio,
  SpeechHttpError,
  type SpeechOutputFormat,
  type SpeechProvider,
  type SpeechProviders,
  type SpeechRequest,
  type SpeechTranscriber,
  type SpokenRecord,
  synthesizeWithin,
  TextGenerationError,
  type TextGenerationRequest,
  type TextGenerator,
  type TimedWord,
  type TranscribeRequest,
  type Transcript,
  type TranscriptionProvider,
  TransientProviderError,
  UnsafeContentError,
  type UpstreamGateway,
  type UpstreamHandle,
  type UpstreamPoll,
  type UpstreamPollOptions,
  type UpstreamProvider,
  type UpstreamRouteStatus,
  type UpstreamSubmitOptions,
  UpstreamTimeoutError,
  type VideoFrame,
  type VideoGenerationRequest,
  type VideoJobRow,
  type VideoOutput,
  type VideoProvider,
  type VideoProviders,
  type VideoRecords,
} from "../contracts/index.ts";
export { captionableRecords } from "../lib/captionable.ts";

// ## Outbound URLs and upstream providers
// The outbound guard reaches a plugin only as its `outbound` capability, configured once by the kernel
// (ALLOW_PRIVATE_URLS and the rest): the bare `checkUrl` and `createOutboundGuard` are not exported, so no plugin
// can check or fetch a URL under rules of its own. Around it: a partner's source URL or stored file read within
// limits, an upstream's base URL and its failures told without its key, upstream text (model answers, provider
// errors, transcript words, titles) cleaned before it is stored, and the three social networks' host rules.

export {
  type CheckUrlResult,
  fetchSource,
  isOutboundError,
  type OutboundGuard,
  outboundToApiError,
  type ReadSourceDeps,
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
  HOSTS,
  type LinkRefusal,
  MAX_URL_LENGTH,
  type Platform,
  parseSocialLink,
  type SocialLink,
} from "../lib/social-links.ts";
export {
  newStandardWebhookSecret,
  signStandardWebhook,
  standardWebhookHeaders,
  verifyStandardWebhook,
} from "../lib/standard-webhooks.ts";
export { cleanUpstreamJson, cleanUpstreamText, UPSTREAM_TEXT_LIMITS } from "../lib/upstream-text.ts";

// ## Media engine
// ffmpeg (native or wasm behind one interface, the kernel's `media` capability), probing, libvips image work and
// metadata-free remuxes.

export {
  BITEXACT_STREAM_ARGS,
  checkPicture,
  displaySize,
  type EngineInput,
  findOnPath,
  findSystemFont,
  finishGeneratedClip,
  firstAudio,
  firstVideo,
  isMediaError,
  isStreamedInput,
  libassFilter,
  type MediaEngine,
  type MediaEngineKind,
  MediaError,
  mp4MetadataCategories,
  NO_METADATA_ARGS,
  type Probe,
  type ProbeExcess,
  parseFfmpegInfo,
  probeImage,
  probeOverBudget,
  stripVideoMetadataArgs,
  videoFrameSize,
  withVips,
} from "../lib/media/index.ts";

// ## Byte formats
// Readers and writers of PNG, JPEG, RIFF (WebP, WAV) and ISO BMFF (MP4) bytes, sniffing, base64 images, and the
// damaged-media error they throw.

export {
  base64Payload,
  concatBytes,
  DamagedMediaError,
  damagedMedia,
  decodedSize,
  decodeImageBase64,
  FORMAT_LIMITS,
  IMAGE_EXT,
  imageKind,
  isDamagedMedia,
  isIsoBmffFirstBox,
  isJpeg,
  isoBmffFirstBox,
  isPng,
  isWebp,
  isWholeIsoBmff,
  jpegSegments,
  latin1,
  type MediaContainer,
  type Mp4Box,
  mp4Boxes,
  PNG_METADATA_CHUNKS,
  type PngChunk,
  paced,
  pacer,
  pngChunks,
  riffChunk,
  riffChunks,
  riffHeader,
  sniffImageType,
  sniffMedia,
  u16be,
  u32be,
  VIDEO_CONTAINERS,
  WEBP_VP8X_FLAGS,
  withoutRanges,
  writePng,
  writeRiff,
} from "../lib/formats/index.ts";

// ## Sandboxes
// What sandbox providers share: markers and provenance, pictures and cards, pacing, the MP4 encode arguments every
// sandbox clip uses, and an upstream stand-in that answers like the real one.

export {
  type CardBox,
  cardBox,
  cardRow,
  dominantColours,
  hasMarker,
  hexColour,
  type Rgb,
  SANDBOX_MARKERS,
  type SandboxPicture,
  sandboxCardPng,
  sandboxConfig,
  sandboxPicture,
  sandboxSleep,
  withoutMarkers,
  withSandboxProvenance,
} from "../lib/sandbox.ts";
export { AAC_STEREO_ARGS, FASTSTART_ARGS, generatedClipTags, h264Args, voiceOverBed } from "../lib/sandbox-mp4.ts";
export { type SandboxRequestStore, sandboxUpstream } from "../lib/sandbox-upstream.ts";

// ## Speech
// Speech for sandboxes that speak: eSpeak NG, speech with the time of every word, and PCM WAV helpers.

export {
  type EspeakVoice,
  pcm16Wav,
  rmsBetween,
  speak,
  speakTimed,
  spokenWords,
  wavSamples,
} from "../lib/speech/index.ts";

// ## Processes, threads and files
// A child process's environment (no secrets of the server's), CPU-bound work in a worker thread so a render
// never holds the event loop, and HTTP file responses.

export { childEnv } from "../lib/child-env.ts";
export { contentDisposition, fileResponse } from "../lib/file-response.ts";
export { inThread } from "../lib/threads.ts";
