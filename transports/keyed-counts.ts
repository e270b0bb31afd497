// What is open, counted in all and by key (a client address, a partner), for the caps that refuse one more:
// connections (connection-limits.ts) and GraphQL subscriptions (graphql/subscription-limits.ts). A key's
// entry goes when its count is back to 0, so the map holds only the keys that hold something.

export class KeyedCounts {
  readonly #byKey = new Map<string, number>();
  #open = 0;

  /** Open in all. */
  get open(): number {
    return this.#open;
  }

  /** Keys holding something (the map's size: back to 0 once everything has closed). */
  get keys(): number {
    return this.#byKey.size;
  }

  heldBy(key: string): number {
    return this.#byKey.get(key) ?? 0;
  }

  /** One more open, also under `key` when one is given. */
  protected add(key: string | undefined): void {
    if (key !== undefined) this.#byKey.set(key, this.heldBy(key) + 1);
    this.#open++;
  }

  /** One fewer open (never below 0), also under `key` when one is given. */
  protected remove(key: string | undefined): void {
    this.#open = Math.max(0, this.#open - 1);
    if (key === undefined) return;
    const held = this.heldBy(key);
    if (held <= 1) this.#byKey.delete(key);
    else this.#byKey.set(key, held - 1);
  }
}
