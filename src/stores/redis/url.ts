/**
 * REDIS_URL, read in its three shapes:
 *   redis://[[user]:password@]host[:port][/db]             one server (rediss:// over TLS)
 *   redis+sentinel://[:password@]h1[:26379],h2/master[/db]  the master Sentinel names
 *   redis+cluster://[:password@]h1[:6379],h2                 a Redis Cluster, from any of its nodes
 * The password is that of the Redis servers, and with Sentinel of the Sentinels too. A query is
 * refused: ioredis would let its options override the safety options of redis/connect.ts.
 * Parsed by hand, in one pass over each part, because the multi-host forms are not URLs.
 */
export interface RedisNode {
  host: string;
  port: number;
}

interface Credentials {
  username?: string;
  password?: string;
}

export type RedisTarget =
  | ({ shape: 'server'; node: RedisNode; db: number; tls: boolean } & Credentials)
  | ({ shape: 'sentinel'; sentinels: RedisNode[]; masterName: string; db: number } & Credentials)
  | ({ shape: 'cluster'; nodes: RedisNode[] } & Credentials);

const SCHEMES = ['redis://', 'rediss://', 'redis+sentinel://', 'redis+cluster://'] as const;

/** The target, or an Error saying what is wrong (never quoting the URL: it may hold a password). */
export function parseRedisUrl(raw: string): RedisTarget {
  const scheme = SCHEMES.find((candidate) => raw.toLowerCase().startsWith(candidate));
  if (!scheme) throw new Error(`must start with ${SCHEMES.join(', ')}`);
  if (raw.includes('?') || raw.includes('#')) throw new Error('takes no query options');
  const rest = raw.slice(scheme.length);
  const slash = rest.indexOf('/');
  const authority = slash === -1 ? rest : rest.slice(0, slash);
  const path = slash === -1 ? [] : rest.slice(slash + 1).split('/');
  const at = authority.lastIndexOf('@');
  const credentials = at === -1 ? {} : parseCredentials(authority.slice(0, at));
  const hosts = (at === -1 ? authority : authority.slice(at + 1)).split(',');

  if (scheme === 'redis+sentinel://') {
    const [masterName = '', db, extra] = path;
    if (!masterName) throw new Error('names no master: add /<master-name> after the Sentinel hosts');
    if (extra !== undefined) throw new Error('has a path beyond /<master-name>/<db>');
    return {
      shape: 'sentinel',
      sentinels: hosts.map((host) => parseNode(host, 26379)),
      masterName,
      db: parseDb(db),
      ...credentials,
    };
  }
  if (scheme === 'redis+cluster://') {
    if (path.some(Boolean)) throw new Error('has a path: a Redis Cluster has only database 0');
    return { shape: 'cluster', nodes: hosts.map((host) => parseNode(host, 6379)), ...credentials };
  }
  if (hosts.length !== 1) throw new Error('lists several hosts: use redis+sentinel:// or redis+cluster://');
  const [db, extra] = path;
  if (extra !== undefined) throw new Error('has a path beyond /<db>');
  return {
    shape: 'server',
    node: parseNode(hosts[0] ?? '', 6379),
    db: parseDb(db),
    tls: scheme === 'rediss://',
    ...credentials,
  };
}

function parseCredentials(userinfo: string): Credentials {
  const colon = userinfo.indexOf(':');
  const username = decode(colon === -1 ? userinfo : userinfo.slice(0, colon));
  const password = colon === -1 ? undefined : decode(userinfo.slice(colon + 1));
  return { ...(username ? { username } : {}), ...(password ? { password } : {}) };
}

function parseNode(text: string, defaultPort: number): RedisNode {
  // `[::1]:6379`: the brackets keep the colons of an IPv6 address apart from the port's.
  const close = text.startsWith('[') ? text.indexOf(']') : -1;
  const hostEnd =
    close !== -1 ? close + 1 : text.lastIndexOf(':') === -1 ? text.length : text.lastIndexOf(':');
  const host = close !== -1 ? text.slice(1, close) : text.slice(0, hostEnd);
  const portText = text.slice(hostEnd + 1);
  if (hostEnd !== text.length && text[hostEnd] !== ':') throw new Error('has a host that is not a host name');
  const hostPattern = close !== -1 ? /^[0-9A-Fa-f:.]+$/ : /^[A-Za-z0-9._-]+$/;
  if (!hostPattern.test(host))
    throw new Error('has a host that is empty or not a host name or [IPv6] address');
  if (hostEnd === text.length) return { host, port: defaultPort };
  const port = /^\d{1,5}$/.test(portText) ? Number(portText) : 0;
  if (port < 1 || port > 65535) throw new Error(`has a port that is not a number from 1 to 65535`);
  return { host, port };
}

function parseDb(text: string | undefined): number {
  if (text === undefined || text === '') return 0;
  if (!/^\d{1,2}$/.test(text)) throw new Error('has a database that is not a number from 0 to 99');
  return Number(text);
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new Error('has a user name or password that is not percent-encoded properly');
  }
}
