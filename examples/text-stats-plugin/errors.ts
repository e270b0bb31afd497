// Every text the plugin answers with, in one place (the 400s of its input check), and the limit one names.
export const MAX_CHARS = 10_000;

export const TEXT_STATS_ERRORS = {
  text: "Please provide a text",
  tooLong: `text must be at most ${MAX_CHARS} characters`,
} as const;
