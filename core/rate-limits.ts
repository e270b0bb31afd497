// THE rate-limit table of the spec (part 1, "Limits": per API key, per endpoint), row for row and in the spec's
// order, keyed by the endpoint exactly as the spec writes it, so an operation, an admin override
// (`limits.rate_limits`) and a reader of the spec all use the same name. Written out literally rather than
// built by a helper so each row can be checked against the spec by eye; test/core/rate-limit.test.ts also
// parses the spec's markdown and fails on any drift.
export interface RateWindow {
  limit: number;
  windowSeconds: number;
}

export const RATE_LIMITS = {
  "POST /analyze": [{ limit: 20, windowSeconds: 60 }],
  "GET /status/<job_id>": [{ limit: 60, windowSeconds: 60 }],
  "GET /analyses": [{ limit: 20, windowSeconds: 60 }],
  "GET /credits": [{ limit: 30, windowSeconds: 60 }],
  "GET /me": [{ limit: 60, windowSeconds: 60 }],
  "GET /usage": [{ limit: 20, windowSeconds: 60 }],
  "GET /transactions": [{ limit: 20, windowSeconds: 60 }],
  "POST /generate-video": [{ limit: 5, windowSeconds: 60 }],
  "GET /video-status/<job_id>": [{ limit: 60, windowSeconds: 60 }],
  "GET /videos": [{ limit: 20, windowSeconds: 60 }],
  "GET /webhook": [{ limit: 60, windowSeconds: 60 }],
  "POST /webhook": [{ limit: 10, windowSeconds: 60 }],
  "POST /webhook/test": [{ limit: 5, windowSeconds: 60 }],
  "GET /webhook/deliveries": [{ limit: 30, windowSeconds: 60 }],
  "GET /captions/style-options": [{ limit: 60, windowSeconds: 60 }],
  "POST /captions": [{ limit: 5, windowSeconds: 60 }],
  "POST /captions/upload": [{ limit: 5, windowSeconds: 60 }],
  "POST /captions/uploads/init": [{ limit: 10, windowSeconds: 60 }],
  "POST /captions/uploads/<session_id>/part/<index>": [
    { limit: 300, windowSeconds: 60 },
    { limit: 3000, windowSeconds: 3600 },
  ],
  "POST /captions/uploads/<session_id>/finalize": [{ limit: 10, windowSeconds: 60 }],
  "POST /captions/uploads/<session_id>/abort": [{ limit: 60, windowSeconds: 60 }],
  "GET /captions/<job_id>": [{ limit: 60, windowSeconds: 60 }],
  "GET /captions": [{ limit: 20, windowSeconds: 60 }],
  "GET /captions/<job_id>/chunks": [{ limit: 30, windowSeconds: 60 }],
  "POST /captions/<job_id>/edit": [{ limit: 10, windowSeconds: 60 }],
  "POST /generate-animation": [{ limit: 5, windowSeconds: 60 }],
  "POST /merge-videos": [{ limit: 5, windowSeconds: 60 }],
  "POST /omni/characters": [{ limit: 20, windowSeconds: 60 }],
  "GET /omni/characters": [{ limit: 60, windowSeconds: 60 }],
  "DELETE /omni/characters/<id>": [{ limit: 20, windowSeconds: 60 }],
  "GET /omni/voice-presets": [{ limit: 60, windowSeconds: 60 }],
  "POST /omni/voices": [{ limit: 20, windowSeconds: 60 }],
  "GET /omni/voices": [{ limit: 60, windowSeconds: 60 }],
  "DELETE /omni/voices/<id>": [{ limit: 20, windowSeconds: 60 }],
  "POST /omni/video": [{ limit: 10, windowSeconds: 60 }],
  "GET /omni/video/<job_id>": [{ limit: 60, windowSeconds: 60 }],
  "GET /omni/videos": [{ limit: 20, windowSeconds: 60 }],
  "POST /omni/script-runner": [{ limit: 5, windowSeconds: 60 }],
  "GET /omni/script-runner/<batch_id>": [{ limit: 60, windowSeconds: 60 }],
  "GET /omni/script-runner": [{ limit: 20, windowSeconds: 60 }],
  "POST /omni/improve-prompt": [{ limit: 10, windowSeconds: 60 }],
  "POST /generate-image": [{ limit: 10, windowSeconds: 60 }],
  "GET /image-status/<gen_id>": [{ limit: 60, windowSeconds: 60 }],
  "GET /images": [{ limit: 20, windowSeconds: 60 }],
  "POST /upscale-image": [{ limit: 10, windowSeconds: 60 }],
  "POST /upscale-video": [{ limit: 5, windowSeconds: 60 }],
  "POST /remove-metadata": [{ limit: 20, windowSeconds: 60 }],
  "POST /social-download": [{ limit: 10, windowSeconds: 60 }],
  "GET /social-download/<download_id>": [{ limit: 120, windowSeconds: 60 }],
  "GET /social-download/<download_id>/file/<idx>": [{ limit: 240, windowSeconds: 60 }],
  "GET /social-downloads": [{ limit: 30, windowSeconds: 60 }],
  "POST /script-runner": [{ limit: 5, windowSeconds: 60 }],
  "GET /script-runner/<job_id>": [{ limit: 60, windowSeconds: 60 }],
  "GET /script-runner": [{ limit: 20, windowSeconds: 60 }],
  "POST /generate-voiceover": [{ limit: 20, windowSeconds: 60 }],
  "GET /voiceover/voices": [{ limit: 60, windowSeconds: 60 }],
  "GET /voiceovers": [{ limit: 30, windowSeconds: 60 }],
  "POST /generate-music": [{ limit: 5, windowSeconds: 60 }],
  "POST /extend-music": [{ limit: 5, windowSeconds: 60 }],
  "GET /music-status/<job_id>": [{ limit: 60, windowSeconds: 60 }],
  "GET /music": [{ limit: 20, windowSeconds: 60 }],
} as const satisfies Record<string, readonly RateWindow[]>;

export type RateLimitName = keyof typeof RATE_LIMITS;

export function isRateLimitName(name: string): name is RateLimitName {
  return Object.hasOwn(RATE_LIMITS, name);
}
