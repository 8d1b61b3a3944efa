import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * The configured `Error-Reporting-Token` values. A presented token is compared with every
 * configured one in constant time: both sides are hashed to the same length first, so neither
 * the position of the first differing character nor the token's length shows in the timing,
 * and the loop never stops early.
 */
export interface ReportingTokens {
  readonly configured: boolean;
  /** The alias of the matching token, or undefined. */
  aliasOf(presented: string): string | undefined;
}

export function createReportingTokens(tokens: ReadonlyMap<string, string>): ReportingTokens {
  const digests = [...tokens].map(([alias, token]) => ({ alias, digest: sha256(token) }));
  return {
    configured: digests.length > 0,
    aliasOf(presented) {
      const digest = sha256(presented);
      let match: string | undefined;
      for (const candidate of digests) {
        if (timingSafeEqual(digest, candidate.digest) && match === undefined) match = candidate.alias;
      }
      return match;
    },
  };
}

function sha256(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
