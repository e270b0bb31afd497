// Byte-level readers and writers of the media formats we take apart or put together: PNG chunks, JPEG marker
// segments, RIFF (WebP) chunks and ISO-BMFF boxes, with the one CRC-32 and the byte helpers they share.
// Readers throw DamagedMediaError and nothing else (ISO-BMFF's stops instead, but past its cap); none of them
// decodes pixels. Each counts its items against FORMAT_LIMITS (limits.ts); `paced` walks one without holding
// the event loop.
export { concatBytes, fourcc, joinRanges, latin1, u16be, u32be, u32le, withoutRanges } from "./bytes.ts";
export { crc32 } from "./crc32.ts";
export { DIMENSION_SCAN_LIMIT, isGif, type PictureFormat, type PictureSize, pictureSize } from "./dimensions.ts";
export { countAgainst, DamagedMediaError, damagedMedia, FormatLimitError, isDamagedMedia } from "./errors.ts";
export {
  base64Payload,
  type DecodedImage,
  decodedSize,
  decodeImageBase64,
  IMAGE_EXT,
  IMAGE_MIME,
  imageKind,
} from "./image-base64.ts";
export {
  appendTopLevelBox,
  type IsoBmffStartOptions,
  isIsoBmffFirstBox,
  isoBmffBox,
  isoBmffFirstBox,
  isWholeIsoBmff,
  type Mp4Box,
  mp4Boxes,
} from "./isobmff.ts";
export { isJpeg, isJpegFrameMarker, JPEG_EOI, JPEG_SOS, type JpegSegment, jpegSegment, jpegSegments } from "./jpeg.ts";
export { FORMAT_LIMITS } from "./limits.ts";
export { paced, pacer } from "./pace.ts";
export {
  isPng,
  PNG_METADATA_CHUNKS,
  PNG_SIGNATURE,
  type PngChunk,
  type PngChunkAt,
  pngChunk,
  pngChunks,
  writePng,
} from "./png.ts";
export {
  isWebp,
  type RiffChunk,
  type RiffChunksOptions,
  riffChunk,
  riffChunks,
  riffHeader,
  WEBP_VP8X_FLAGS,
  writeRiff,
} from "./riff.ts";
export {
  AUDIO_CONTAINERS,
  IMAGE_CONTAINERS,
  type ImageMimeType,
  MEDIA_CONTAINERS,
  type MediaContainer,
  sniffImageType,
  sniffMedia,
  VIDEO_CONTAINERS,
} from "./sniff.ts";
