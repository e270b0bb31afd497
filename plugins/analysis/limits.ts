// The numbers of ad analysis but its price (prices.ts): the spec's list bounds and ours (how much is measured).
import { PAGE_BOUNDS } from "mediagate/plugin";

/** GET /analyses: convention 8. */
export const LIST_BOUNDS = PAGE_BOUNDS.standard;

export const MEASURE = {
  /** ffmpeg's scene score above which a frame starts a new shot (0.3 finds hard cuts, not motion). */
  sceneThreshold: 0.3,
  /** Frames looked at by libvips: the first frame and the frames after the first cuts. */
  maxFrames: 12,
  /** Frames are scaled down to this width before they are measured (colours need few pixels). */
  frameWidth: 320,
  /** A frame's colours are counted on a grid of this many pixels a side. */
  colourGrid: 32,
  /** A colour must cover this share of a frame to be named, and a frame names at most this many. */
  minColourShare: 0.08,
  maxColoursPerFrame: 3,
  /** The measuring run's deadline: a fixed allowance plus this much per second of ad. */
  timeoutBaseMs: 120_000,
  timeoutPerSecondMs: 2_000,
} as const;

/** What the written texts look at. */
export const FACTS = {
  /** The hook: what is said and shown in the first seconds. */
  hookSeconds: 3,
  /** How many colours the whole ad names. */
  dominantColours: 3,
} as const;

/** The job: attempts after the first (a crash, an unexpected error), and one attempt's deadline. */
export const JOB = {
  retries: 1,
  timeoutSeconds: 1800,
  concurrency: 2,
  /** The downloaded ad is kept (privately) this long for a retry, then swept; a finished job removes it. */
  keepMediaMs: 24 * 3600 * 1000,
  /** The written answer's cap, in characters. */
  maxAnswerChars: 20_000,
} as const;
