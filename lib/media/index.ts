// The media engine: ffmpeg (native or wasm, one interface), probing, libvips image work, metadata-free remuxes.
// Byte-level format readers and writers are lib/formats.
// The kernel imports from here; plugins reach it through mediagate/plugin. The files behind it are free to change.

export {
  checkPicture,
  MEDIA_BUDGETS,
  type PictureBudget,
  type PictureVerdict,
  type ProbeBudget,
  type ProbeExcess,
  pictureWithinBudget,
  probeOverBudget,
} from "./budgets.ts";
export { isStreamedInput, libassFilter, readHead } from "./common.ts";
export { createMediaEngine, detectNativeFfmpeg, type MediaEngineOptions } from "./engine.ts";
export {
  classifyFailure,
  isMediaError,
  MEDIA_PUBLIC_MESSAGES,
  MediaError,
  type MediaErrorCode,
  toMediaError,
} from "./errors.ts";
export {
  type EngineJob,
  findSystemFont,
  finishGeneratedClip,
  generateTestVideo,
  type StripVideoOptions,
  stripVideoMetadataArgs,
  type TestVideoOptions,
  testVideoJob,
  videoFrameSize,
} from "./generate.ts";
export { MP4_UUIDS, type Mp4MetadataCategory, mp4MetadataCategories } from "./mp4-metadata.ts";
export {
  type ChildLimits,
  createNativeEngine,
  DEFAULT_CHILD_LIMITS,
  findOnPath,
  limitedCommand,
  type NativeOptions,
  supportsStatsPeriod,
} from "./native.ts";
export { BITEXACT_STREAM_ARGS, NO_METADATA_ARGS } from "./no-metadata.ts";
export { createMediaPool, defaultMediaConcurrency, type MediaPool, type MediaPoolStats } from "./pool.ts";
export {
  displaySize,
  firstAudio,
  firstVideo,
  type Probe,
  type ProbeStream,
  parseFfmpegInfo,
  parseFfprobeJson,
  type StreamType,
} from "./probe.ts";
export { durationLimitFromArgs, ProgressTracker, parseFfmpegTime } from "./progress.ts";
export {
  type EngineInput,
  FILE_NAME,
  FONTS_DIR,
  type MediaEngine,
  type MediaEngineKind,
  type MediaEngineMode,
  type RunIO,
  type StreamedInput,
} from "./types.ts";
export {
  convertImage,
  type EncodeOptions,
  encodeImage,
  type ImageFormat,
  type ImageProbe,
  type ImageResult,
  loadVips,
  type OutputImageFormat,
  probeImage,
  type ResizeOptions,
  resizeImage,
  type VipsImage,
  type VipsModule,
  withVips,
} from "./vips.ts";
export { createWasmEngine, type WasmOptions } from "./wasm.ts";
