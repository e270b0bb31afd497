import { isTransient } from "../lib/transient.ts";
import type { Logger } from "./log.ts";

// A database or Redis that drops the connection while the server boots (a terminated backend, a restart under
// way) fails the boot only when it stays out of reach: the whole boot, connections closed in between, is tried
// again after these waits (about 15 s in all), as an orchestrator would restart the process. Anything else (a
// broken plugin, a bad variable, a refused password) fails at once.
const BOOT_RETRY_WAITS_MS = [250, 500, 1000, 2000, 4000, 8000];

export async function retryWhileUnreachable<T>(log: Logger, boot: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await boot();
    } catch (err) {
      const wait = BOOT_RETRY_WAITS_MS[attempt];
      if (wait === undefined || !isTransient(err)) throw err;
      log.warn("boot interrupted: the database or Redis is out of reach; trying again", {
        reason: (err as Error).message,
        retry_in_ms: wait,
      });
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}
