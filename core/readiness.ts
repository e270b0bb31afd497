// Readiness: whether this process can do its work now. /healthz says only that the process answers (a
// liveness probe: restart it when it does not); /readyz says whether what it depends on answers too (a
// readiness probe: send it no traffic until it does). Checked on every call, each within a time limit, all at
// once, so a probe gets its answer within READINESS_TIMEOUT_MS however many checks hang.
import { sql } from "kysely";
import type { Kernel } from "./kernel.ts";

const READINESS_TIMEOUT_MS = 3_000;

/** "ok", or what went wrong, in words that name no host, address or internal message (the answer is public). */
export type CheckResult = "ok" | "failed" | "timed out";

export interface Readiness {
  ready: boolean;
  /** database, queue, and redis when REDIS_URL is set. */
  checks: Record<string, CheckResult>;
  /**
   * What is worth knowing and does not decide readiness: upstream gateway routes and their breakers (a
   * degraded route must not take the process out of rotation; the next route or the retry serves). Absent
   * when no gateway routes anything.
   */
  details?: { upstreams: Array<{ model: string; route: number; provider: string; state: string }> };
}

async function within(
  check: () => Promise<unknown>,
  timeoutMs: number,
  onFailure: (err: unknown) => void,
): Promise<CheckResult> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const outcome = await Promise.race([
      check().then(
        () => "ok" as const,
        (err: unknown) => {
          onFailure(err);
          return "failed" as const;
        },
      ),
      new Promise<"timed out">((resolve) => (timer = setTimeout(() => resolve("timed out"), timeoutMs))),
    ]);
    return outcome;
  } finally {
    clearTimeout(timer);
  }
}

export async function checkReadiness(kernel: Kernel, timeoutMs = READINESS_TIMEOUT_MS): Promise<Readiness> {
  const checks: Array<[string, () => Promise<unknown>]> = [
    ["database", () => sql`select 1`.execute(kernel.database.kysely)],
    // pg-boss, through its own connection on Postgres: a queue that cannot fetch leaves every job waiting.
    ["queue", () => kernel.queue.check()],
  ];
  if (kernel.config.redisUrl) checks.push(["redis", () => kernel.counters.ping()]);
  const results = await Promise.all(
    checks.map(
      async ([name, check]) =>
        [
          name,
          await within(check, timeoutMs, (err) => kernel.log.warn(`readiness: ${name} check failed`, err)),
        ] as const,
    ),
  );
  const routes = kernel.contributions("upstream.gateway").flatMap((g) => g.routes());
  return {
    ready: results.every(([, r]) => r === "ok"),
    checks: Object.fromEntries(results),
    // Provider names and model ids only: the answer is public, and the file's URLs and variables stay out.
    ...(routes.length
      ? {
          details: {
            upstreams: routes.map((r) => ({
              model: r.model,
              route: r.index,
              provider: r.provider,
              state: r.retryAfterUntil !== undefined && r.state === "closed" ? "retry-after" : r.state,
            })),
          },
        }
      : {}),
  };
}
