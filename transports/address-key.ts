// The key a client address counts under, for the connection caps and the per-address request budgets alike.

/**
 * An IPv4 address as it is (an IPv4-mapped IPv6 one unmapped), an IPv6 address by its /64: one host is usually
 * given a whole /64 and could otherwise take a fresh budget for every address in it.
 */
export function addressKey(address: string): string;
export function addressKey(address: string | undefined): string | undefined;
export function addressKey(address: string | undefined): string | undefined {
  if (!address) return address;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!address.includes(":")) return address;
  const bare = address.split("%")[0]!.toLowerCase();
  const [head, tail] = bare.split("::") as [string, string | undefined];
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups =
    tail === undefined ? left : [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ""))
    .join(":")}::/64`;
}
