// The Script Runner's caps and fixed sizes (spec part 3 "Limits"); its prices are prices.ts.

/** Frames and clips are 9:16 at 720p. */
export const FRAME = { width: 720, height: 1280 } as const;

export const LIMITS = {
  nameChars: 200,
  /**
   * The whole script (ours: the spec caps scenes, 20, not the prompt). Each scene becomes one video prompt,
   * and the spec's cap for one video prompt in the same document is Omni's 10,000 characters, so a script
   * of 20 such scenes is 200,000; headings, names and a CHARACTER block are small beside that. Counted as
   * Omni counts its prompt (string length, UTF-16 units). It bounds the parser's work before anything else
   * reads the prompt (issue 45).
   */
  promptChars: 20 * 10_000,
  characterImageBytes: 20 * 1024 * 1024,
} as const;

export const DEFAULT_NAME = "Script Runner Run";
