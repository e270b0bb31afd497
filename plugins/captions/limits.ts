// Every number of the captions area but its price (prices.ts): spec part 2 "Limits", part 1's captions rows.

export const LIMITS = {
  /** POST /captions/upload: the file part. */
  singleUploadBytes: 95_000_000,
  /** Chunked upload sessions. */
  chunkSize: 8_388_608,
  chunkedMaxBytes: 1_000_000_000,
  maxSeconds: 1800,
  openSessions: 2,
  /** Active caption jobs per account (partner setting `limits.caption_jobs`), re-burns included. */
  activeJobs: 10,
  /** POST /captions/<job_id>/edit. */
  editMaxChunks: 4000,
  editMaxText: 200,
  editMaxSeconds: 7200,
  /** GET /captions/<job_id>/chunks returns chunks inline up to this many; `editable` needs it too. */
  maxInlineEditChunks: 800,
} as const;

export const RETENTION = {
  captionedOutputDays: 14,
  uploadedSourceDays: 2,
  /** Open chunked-upload sessions nobody finalized are removed after this long (our choice; spec: "garbage-collected"). */
  abandonedSessionHours: 24,
} as const;

export const DAY_MS = 24 * 3600 * 1000;
