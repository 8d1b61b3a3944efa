import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { normaliseAddress } from './client-address.ts';

/**
 * Who may report errors: client addresses (exact IPs and CIDR ranges, IPv4 and IPv6) or
 * `Origin` hosts. Either list admits a client; both empty admit nobody.
 */
export interface ClientWhitelist {
  admitsAddress(address: string): boolean;
  admitsOrigin(origin: string | undefined): boolean;
}

export class InvalidWhitelistEntry extends Error {
  constructor(entry: string) {
    super(`Invalid IP whitelist entry "${entry}": expected an IP address or a CIDR range such as 10.0.0.0/8`);
    this.name = 'InvalidWhitelistEntry';
  }
}

/** Throws InvalidWhitelistEntry for an entry that is neither an IP address nor a CIDR range. */
export function createClientWhitelist(entries: {
  addresses: readonly string[];
  domains: readonly string[];
}): ClientWhitelist {
  const addresses = new BlockList();
  for (const entry of entries.addresses) addEntry(addresses, entry);
  const domains = new Set(entries.domains.map(normaliseHost));
  return {
    admitsAddress(address) {
      const canonical = normaliseAddress(address);
      if (isIPv4(canonical)) return addresses.check(canonical, 'ipv4');
      return isIPv6(canonical) && addresses.check(canonical, 'ipv6');
    },
    admitsOrigin(origin) {
      const host = originHost(origin);
      return host !== undefined && domains.has(host);
    },
  };
}

/** Throws InvalidWhitelistEntry for the first address entry createClientWhitelist would refuse. */
export function checkAddressEntries(addresses: readonly string[]): void {
  createClientWhitelist({ addresses, domains: [] });
}

function addEntry(list: BlockList, entry: string): void {
  const [network = '', prefixText, ...rest] = entry.trim().split('/');
  const address = normaliseAddress(network);
  const family = isIPv4(address) ? 'ipv4' : isIPv6(address) ? 'ipv6' : undefined;
  if (!family || rest.length > 0) throw new InvalidWhitelistEntry(entry);
  if (prefixText === undefined) {
    list.addAddress(address, family);
    return;
  }
  let prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : Number.NaN;
  // An IPv4-mapped range (::ffff:10.0.0.0/104) is the IPv4 range it maps.
  if (family === 'ipv4' && isIPv6(network)) prefix -= 96;
  if (!(prefix >= 0 && prefix <= (family === 'ipv4' ? 32 : 128))) throw new InvalidWhitelistEntry(entry);
  list.addSubnet(address, prefix, family);
}

/** The host of an `Origin` header (`https://app.example.com:8443` gives `app.example.com`). */
export function originHost(origin: string | undefined): string | undefined {
  if (!origin || origin === 'null') return undefined;
  try {
    const url = new URL(origin);
    return url.protocol === 'http:' || url.protocol === 'https:' ? normaliseHost(url.hostname) : undefined;
  } catch {
    return undefined;
  }
}

function normaliseHost(host: string): string {
  return host.trim().toLowerCase().replace(/\.$/, '');
}
