import { BlockList, isIPv4, isIPv6 } from 'node:net';

/** Where the address checked against the whitelist came from. */
export type AddressSource = 'X-Forwarded-For' | 'Client-IP' | 'socket';

export interface ClientAddress {
  /** Normalised: IPv4-mapped IPv6 (`::ffff:192.0.2.1`) becomes the IPv4 address. */
  address: string;
  source: AddressSource;
}

/**
 * The client address of an error report, resolved in the order docs/security.md gives:
 * `X-Forwarded-For` when its first entry parses as a public IP address, then `Client-IP` when
 * it parses as an IP address, then the socket's peer address.
 *
 * There is no trusted-proxy list, so a client can set both headers itself; only a proxy in
 * front that overwrites them (the project's nginx does) makes them trustworthy.
 */
export function resolveClientAddress(request: {
  forwardedFor: string | readonly string[] | undefined;
  clientIp: string | readonly string[] | undefined;
  remoteAddress: string;
}): ClientAddress {
  const forwarded = parseAddress(firstEntry(request.forwardedFor));
  if (forwarded !== undefined && isPublicAddress(forwarded)) {
    return { address: forwarded, source: 'X-Forwarded-For' };
  }
  const clientIp = parseAddress(firstEntry(request.clientIp));
  if (clientIp !== undefined) return { address: clientIp, source: 'Client-IP' };
  return { address: normaliseAddress(request.remoteAddress), source: 'socket' };
}

/** `X-Forwarded-For: client, proxy1, proxy2`: the first entry names the original client. */
function firstEntry(header: string | readonly string[] | undefined): string | undefined {
  const value = typeof header === 'string' ? header : header?.[0];
  return value?.split(',')[0]?.trim();
}

/** The address in canonical form, or undefined when `text` is not a bare IP address. */
export function parseAddress(text: string | undefined): string | undefined {
  if (!text) return undefined;
  if (isIPv4(text)) return text;
  if (isIPv6(text)) return normaliseAddress(text);
  return undefined;
}

/**
 * The canonical text of an address (RFC 5952 for IPv6: lower case, shortest form), with
 * IPv4-mapped IPv6 addresses (what a dual-stack socket reports for IPv4 peers) as IPv4.
 */
export function normaliseAddress(address: string): string {
  if (!isIPv6(address)) return address;
  let canonical: string;
  try {
    // The WHATWG URL serializer is RFC 5952's; it writes the mapped IPv4 part in hex.
    canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return address.toLowerCase(); // a zone id (fe80::1%eth0), which URLs do not take
  }
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
  if (!mapped) return canonical;
  const high = Number.parseInt(mapped[1] ?? '0', 16);
  const low = Number.parseInt(mapped[2] ?? '0', 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/** IANA special-purpose IPv4 blocks (RFC 6890 and successors), multicast and reserved. */
const NON_PUBLIC_IPV4: readonly [string, number][] = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private (RFC 1918)
  ['100.64.0.0', 10], // shared address space, carrier-grade NAT (RFC 6598)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation (TEST-NET-1)
  ['192.88.99.0', 24], // deprecated 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation (TEST-NET-2)
  ['203.0.113.0', 24], // documentation (TEST-NET-3)
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and the limited broadcast 255.255.255.255
];

/** Within global unicast (2000::/3), the blocks that are not a public host address. */
const NON_PUBLIC_GLOBAL_IPV6: readonly [string, number][] = [
  ['2001::', 23], // IETF protocol assignments (Teredo, benchmarking, ORCHID, ...)
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4
  ['3fff::', 20], // documentation (RFC 9637)
];

const nonPublic = new BlockList();
for (const [network, prefix] of NON_PUBLIC_IPV4) nonPublic.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of NON_PUBLIC_GLOBAL_IPV6) nonPublic.addSubnet(network, prefix, 'ipv6');
const globalUnicast = new BlockList();
globalUnicast.addSubnet('2000::', 3, 'ipv6');

/**
 * Whether `address` (canonical, see parseAddress) is a public unicast address: not private,
 * loopback, link-local, unique local (fc00::/7), multicast, documentation or reserved.
 * Every IPv6 address outside 2000::/3 (::1, fe80::/10, fc00::/7, ff00::/8, ...) is not public.
 */
export function isPublicAddress(address: string): boolean {
  if (isIPv4(address)) return !nonPublic.check(address, 'ipv4');
  if (!isIPv6(address)) return false;
  return globalUnicast.check(address, 'ipv6') && !nonPublic.check(address, 'ipv6');
}
