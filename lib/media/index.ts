// The media engine: ffmpeg (native or wasm, one interface), probing, libvips image work, metadata-free remuxes.
// Byte-level format readers and writers are lib/formats.
// The kernel imports from here; plugins reach it through mediagate/plugin. The files behind it are free to change.
export { createMediaEngine, detectNativeFfmpeg, type MediaEngineOptions } from "./engine.ts";
export { type ChildLimits, createNativeEngine, DEFAULT_CHILD_LIMITS, findOnPath, limitedCommand, supportsStatsPeriod, type NativeOptions } from "./native.ts";
export { createWasmEngine, type WasmOptions } from "./wasm.ts";
export { createMediaPool, defaultMediaConcurrency, type MediaPool, type MediaPoolStats } from "./pool.ts";
export {
  FILE_NAME,
  FONTS_DIR,
  type EngineInput,
  type MediaEngine,
  type MediaEngineKind,
  type MediaEngineMode,
  type RunIO,
  type StreamedInput,
} from "./types.ts";
export { isStreamedInput, libassFilter, readHead } from "./common.ts";
export {
  classifyFailure,
  isMediaError,
  MEDIA_PUBLIC_MESSAGES,
  MediaError,
  toMediaError,
  type MediaErrorCode,
} from "./errors.ts";
export {
  displaySize,
  firstAudio,
  firstVideo,
  parseFfmpegInfo,
  parseFfprobeJson,
  type Probe,
  type ProbeStream,
  type StreamType,
} from "./probe.ts";
export { durationLimitFromArgs, parseFfmpegTime, ProgressTracker } from "./progress.ts";
export {
  convertImage,
  encodeImage,
  loadVips,
  probeImage,
  resizeImage,
  withVips,
  type EncodeOptions,
  type ImageFormat,
  type ImageProbe,
  type ImageResult,
  type OutputImageFormat,
  type ResizeOptions,
  type VipsImage,
  type VipsModule,
} from "./vips.ts";
export {
  findSystemFont,
  finishGeneratedClip,
  generateTestVideo,
  stripVideoMetadataArgs,
  type StripVideoOptions,
  testVideoJob,
  videoFrameSize,
  type EngineJob,
  type TestVideoOptions,
} from "./generate.ts";
export { MP4_UUIDS, mp4MetadataCategories, type Mp4MetadataCategory } from "./mp4-metadata.ts";
export { checkPicture, MEDIA_BUDGETS, pictureWithinBudget, probeOverBudget, type PictureBudget, type PictureVerdict, type ProbeBudget, type ProbeExcess } from "./budgets.ts";
