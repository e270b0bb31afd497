// The key a client address counts under (transports/address-key.ts), for both places that count by address
// (transports/connection-limits.ts for connections, transports/graphql/limits.ts for unauthenticated calls): IPv4 as it is, an
// IPv4-mapped IPv6 address unmapped, IPv6 by its /64 (zeros and case normalised, a zone dropped).
export const ADDRESS_KEYS: ReadonlyArray<readonly [address: string, key: string]> = [
  ["203.0.113.7", "203.0.113.7"],
  ["192.0.2.1", "192.0.2.1"],
  ["::ffff:203.0.113.7", "203.0.113.7"],
  ["::ffff:10.1.2.3", "10.1.2.3"],
  ["2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"],
  ["2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"],
  ["2001:db8:1:2::7", "2001:db8:1:2::/64"],
  ["2001:0db8:0001:0002::1", "2001:db8:1:2::/64"],
  ["2001:db8::1", "2001:db8:0:0::/64"],
  ["::1", "0:0:0:0::/64"],
  ["fe80::1%eth0", "fe80:0:0:0::/64"],
];
