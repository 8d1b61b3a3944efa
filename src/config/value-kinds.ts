import { GRANT_TYPES, type GrantType } from '../oauth/model.ts';
import { ConfigError } from './config.ts';
import type { ValueKind } from './setting.ts';

const code = (text: string) => `\`${text}\``;

// The kinds of value a variable holds. Each parser sees the variable's text (or its default).

export function text(accepts: string): ValueKind<string> {
  return { accepts, parse: (raw) => raw };
}

export function integer(min: number, max: number): ValueKind<number> {
  return {
    accepts: `a whole number from ${min} to ${max}`,
    parse(raw, name) {
      if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
      const value = Number(raw);
      if (value < min || value > max)
        throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
      return value;
    },
  };
}

export function oneOf<T extends string>(allowed: readonly T[]): ValueKind<T> {
  return {
    accepts: `one of ${allowed.map(code).join(', ')}`,
    parse(raw, name) {
      if (!(allowed as readonly string[]).includes(raw)) {
        throw new ConfigError(name, `must be one of ${allowed.join(', ')}, got "${raw}"`);
      }
      return raw as T;
    },
  };
}

export function httpUrl(): ValueKind<string> {
  return {
    accepts: 'an `http:` or `https:` URL',
    parse(raw, name) {
      try {
        const parsed = new URL(raw);
        if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('not http(s)');
      } catch {
        throw new ConfigError(name, `must be an http(s) URL, got "${raw}"`);
      }
      return raw;
    },
  };
}

/**
 * Text that the module which uses it checks with its own parser, so that what it would refuse
 * later stops the start now, naming the variable. `check` throws an Error saying what is
 * wrong, never quoting the text (connection URLs carry passwords); `refusal` introduces that
 * message after the variable's name.
 */
export function checkedBy(accepts: string, check: (raw: string) => unknown, refusal = ''): ValueKind<string> {
  return {
    accepts,
    parse(raw, name) {
      refuseAs(name, refusal, () => check(raw));
      return raw;
    },
  };
}

/** A comma list that the module which uses it checks with its own parser (see checkedBy). */
export function listCheckedBy(
  accepts: string,
  check: (items: readonly string[]) => unknown,
  refusal = '',
): ValueKind<readonly string[]> {
  return listOf(accepts, (items, name) => {
    refuseAs(name, refusal, () => check(items));
    return items;
  });
}

function refuseAs(name: string, refusal: string, check: () => unknown): void {
  try {
    check();
  } catch (error) {
    throw new ConfigError(name, `${refusal}${(error as Error).message}`);
  }
}

const UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };

/** A size in bytes, from 1 up to `max` when given. */
export function byteSize(max = Number.POSITIVE_INFINITY): ValueKind<number> {
  return {
    accepts:
      'a whole number of bytes, or with `kb`, `mb` or `gb` (`1kb` is 1024 bytes)' +
      (Number.isFinite(max) ? `, at most ${max} bytes` : ''),
    parse(given, name) {
      const raw = given.trim().toLowerCase();
      const match = /^(\d+)\s*(b|kb|mb|gb)?$/.exec(raw);
      const value = match ? Number(match[1]) * (UNITS[match[2] ?? 'b'] ?? 1) : 0;
      if (!match || value < 1)
        throw new ConfigError(name, `must be a size such as 100kb or 1mb, got "${raw}"`);
      if (value > max) throw new ConfigError(name, `must be at most ${max} bytes, got "${raw}"`);
      return value;
    },
  };
}

export function list(raw: string): string[] {
  return raw
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}

/** A comma list, where an empty value is the empty list. */
export function listOf<T>(accepts: string, parse: (items: string[], name: string) => T): ValueKind<T> {
  return { accepts, emptyIsValue: true, parse: (raw, name) => parse(list(raw), name) };
}

export function grantList(): ValueKind<ReadonlySet<GrantType>> {
  return listOf(`a comma list of ${GRANT_TYPES.map(code).join(', ')}; empty enables none`, (names, name) => {
    for (const grant of names) {
      if (!(GRANT_TYPES as readonly string[]).includes(grant)) {
        throw new ConfigError(name, `names an unknown grant "${grant}" (known: ${GRANT_TYPES.join(', ')})`);
      }
    }
    return new Set(names as GrantType[]);
  });
}

export function corsOrigins(): ValueKind<readonly string[] | '*'> {
  return listOf('a comma list of origins such as `https://app.example.com`, or `*`', (origins) =>
    origins.includes('*') ? '*' : origins,
  );
}

/**
 * `alias:token` pairs (a bare token gets the alias `token-N`). Tokens must be long enough not
 * to be guessed.
 */
export function errorReportTokens(): ValueKind<ReadonlyMap<string, string>> {
  return listOf(
    'a comma list of `alias:token` pairs with distinct aliases and tokens of at least 16 characters',
    (entries, name) => {
      const tokens = new Map<string, string>();
      entries.forEach((entry, index) => {
        const colon = entry.indexOf(':');
        const alias = colon > 0 ? entry.slice(0, colon) : `token-${index + 1}`;
        const token = colon > 0 ? entry.slice(colon + 1) : entry;
        if (token.length < 16)
          throw new ConfigError(name, `entry ${index + 1} has a token shorter than 16 characters`);
        if (tokens.has(alias)) throw new ConfigError(name, `alias "${alias}" is used twice`);
        tokens.set(alias, token);
      });
      return tokens;
    },
  );
}
