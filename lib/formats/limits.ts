// Every cap of the byte-format walkers, in one place (issue 45, "Bounded parsers"). A walker counts the items
// it yields against its cap and throws FormatLimitError (a DamagedMediaError, so every caller already turns it
// into its area's "not a valid file" answer) on the first item past it; callers keep running counts and
// maxima, never a list per item. The caps are far above any real file and far below what a file of the same
// size made of empty items holds: 20 MB of 12-byte PNG chunks is 1.6 million of them, 30 MB of 8-byte boxes
// almost 4 million.

export const FORMAT_LIMITS = {
  /**
   * Chunks of one PNG. Real files have a handful plus their IDATs: encoders split the image data in 8-64 KB
   * pieces (libpng 8 KB: 2,500 for a 20 MB file); an APNG adds two per frame (fcTL, fdAT), so 10,000
   * frames take 20,000. Five times that.
   */
  pngChunks: 100_000,
  /**
   * Marker segments of one JPEG (tables, frame, scans, APPn, COM; restart markers inside scan data are not
   * segments). Real files have tens; the most we know of are an extended XMP packet or an ICC profile cut
   * in 64 KB APPn pieces: 320 for the 20 MB our areas accept. Thirty times that.
   */
  jpegSegments: 10_000,
  /** Chunks of one RIFF (WebP, WAV): an animated WebP has one ANMF per frame; like PNG's frames, with room. */
  riffChunks: 100_000,
  /**
   * Boxes side by side at a file's top level. A fragmented MP4 has a moof and an mdat per fragment: at one
   * fragment per frame (the finest any muxer writes), 30 minutes at 50 fps is 90,000 fragments, 180,000 boxes.
   */
  isoBmffTopLevelBoxes: 250_000,
  /**
   * Boxes inside any one box (a moov's, a trak's, a moof's children). Real ones hold tens (a moov: mvhd, a
   * few trak, mvex, udta, meta); the largest are a HEIF's item lists, hundreds for a tiled picture.
   */
  isoBmffChildBoxes: 10_000,
  /** Fragments (moof boxes) of one file: one per frame of 30 minutes at 50 fps (see isoBmffTopLevelBoxes). */
  isoBmffFragments: 100_000,
  /**
   * Nesting of boxes in boxes a walk goes down (lib/media mp4-metadata.ts): real files go 8-9 deep
   * (moov/trak/mdia/minf/stbl/stsd/avc1/avcC); metadata sits at most at moov/trak/udta/meta/ilst.
   */
  isoBmffDepth: 12,
  /**
   * How long a walk runs on the event loop before it lets other work in (`pace`). Ten milliseconds keeps
   * /healthz and every other request answering within a few turns while a 20-100 MB file is walked.
   */
  sliceMs: 10,
} as const;
