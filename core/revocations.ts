// Keys that stop being valid while something still holds them open. A request authenticates once, and
// ends soon after; a GraphQL subscription (SSE or WebSocket) also authenticates once, when it starts, and
// may then stay open for hours. So every such long-lived holder registers here, per process, and is told to
// re-authenticate its key when that key may have stopped being valid:
//
// - at once, when a key is rotated or its partner deactivated: core/accounts.ts rechecks this process's
//   holders of that partner and publishes KEY_REVOKED on the kernel's pub/sub (Redis when REDIS_URL is set),
//   and every other process rechecks its own on receipt;
// - as a backstop for a lost message: a holder re-checks its key before each event it delivers, and every
//   holder is re-checked each RECHECK_MS. Both go through the auth cache, whose entries live at most 5 s,
//   so a quiet holder costs at most one lookup per interval.
//
// A holder whose key fails ends itself with the error a request carrying that key would now get (401
// "Invalid API key" after a rotation, 403 "API key deactivated"). `endAll` ends every holder with one final
// error: the shutdown path uses it, so clients are told why their stream ended.

/** The pub/sub channel of revocations: `{ partnerId, origin }`. */
export const KEY_REVOKED = "partner.key-revoked";

/** How often every open holder re-checks its key, whatever messages arrive. */
const RECHECK_MS = 15_000;

/** How long `endAll` waits, at most, for the holders to hand their final error to their transport. */
const END_WAIT_MS = 5_000;

export interface KeyHolder {
  readonly partnerId: string;
  /** Re-authenticates the key it holds and, if that is now refused, ends itself with the refusal. Never throws. */
  recheck(): Promise<void>;
  /**
   * Ends with `error` as its final message. Resolves once the holder is finished: the error handed to its
   * consumer and the end taken, or the consumer gone.
   */
  end(error: unknown): Promise<void>;
}

export class Revocations {
  #holders = new Set<KeyHolder>();
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly recheckMs: number = RECHECK_MS) {}

  /** Registers a holder until the returned function is called (when it ends, however it ends). */
  hold(holder: KeyHolder): () => void {
    this.#holders.add(holder);
    if (!this.#timer && this.recheckMs > 0) {
      this.#timer = setInterval(() => void this.recheckAll(), this.recheckMs);
      // The backstop must not keep a process alive that has nothing else to do.
      this.#timer.unref?.();
    }
    return () => {
      this.#holders.delete(holder);
      if (this.#holders.size === 0 && this.#timer) {
        clearInterval(this.#timer);
        this.#timer = undefined;
      }
    };
  }

  /** Open holders in this process. */
  get size(): number {
    return this.#holders.size;
  }

  /** This process's holders of one partner's keys re-check them (after a rotation or deactivation). */
  async recheck(partnerId: string): Promise<void> {
    await Promise.all([...this.#holders].filter((h) => h.partnerId === partnerId).map((h) => h.recheck()));
  }

  /** Every holder re-checks its key: the periodic backstop, callable directly. */
  async recheckAll(): Promise<void> {
    await Promise.all([...this.#holders].map((h) => h.recheck()));
  }

  /**
   * Ends every holder open now with `error` as its final message, and resolves once each has handed it on
   * (or after a few seconds, for a consumer that stopped reading).
   */
  async endAll(error: unknown): Promise<void> {
    const ends = Promise.all([...this.#holders].map((h) => h.end(error)));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const cap = new Promise<void>((resolve) => (timer = setTimeout(resolve, END_WAIT_MS)));
    await Promise.race([ends, cap]);
    clearTimeout(timer);
  }
}
