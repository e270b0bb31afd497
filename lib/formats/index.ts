// Byte-level readers and writers of the media formats we take apart or put together: PNG chunks, JPEG marker
// segments, RIFF (WebP) chunks and ISO-BMFF boxes, with the one CRC-32 and the byte helpers they share.
// Readers throw DamagedMediaError and nothing else (ISO-BMFF's stops instead, but past its cap); none of them
// decodes pixels. Each counts its items against FORMAT_LIMITS (limits.ts); `paced` walks one without holding
// the event loop.
export { concatBytes, fourcc, joinRanges, latin1, u16be, u32be, u32le, withoutRanges } from "./bytes.ts";
export { crc32 } from "./crc32.ts";
export { countAgainst, DamagedMediaError, damagedMedia, FormatLimitError, isDamagedMedia } from "./errors.ts";
export { FORMAT_LIMITS } from "./limits.ts";
export { paced, pacer } from "./pace.ts";
export { isPng, PNG_METADATA_CHUNKS, PNG_SIGNATURE, pngChunk, pngChunks, writePng, type PngChunk, type PngChunkAt } from "./png.ts";
export { isJpeg, isJpegFrameMarker, JPEG_EOI, JPEG_SOS, jpegSegment, jpegSegments, type JpegSegment } from "./jpeg.ts";
export { isWebp, riffChunk, riffChunks, riffHeader, WEBP_VP8X_FLAGS, writeRiff, type RiffChunk, type RiffChunksOptions } from "./riff.ts";
export { appendTopLevelBox, isIsoBmffFirstBox, isoBmffBox, isoBmffFirstBox, isWholeIsoBmff, mp4Boxes, type IsoBmffStartOptions, type Mp4Box } from "./isobmff.ts";
export { AUDIO_CONTAINERS, IMAGE_CONTAINERS, MEDIA_CONTAINERS, sniffImageType, sniffMedia, VIDEO_CONTAINERS, type ImageMimeType, type MediaContainer } from "./sniff.ts";
export { base64Payload, decodedSize, decodeImageBase64, IMAGE_EXT, IMAGE_MIME, imageKind, type DecodedImage } from "./image-base64.ts";
export { DIMENSION_SCAN_LIMIT, isGif, pictureSize, type PictureFormat, type PictureSize } from "./dimensions.ts";
