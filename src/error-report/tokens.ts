import { createHash, timingSafeEqual } from 'node:crypto';
import { REDACTED } from '../logging/redact.ts';

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
  /**
   * `text` with every configured token blanked: as is, percent-encoded, in base64 or base64url,
   * each also as JSON escapes it. A report may quote its own token; the log never holds one.
   */
  blankIn(text: string): string;
}

export function createReportingTokens(tokens: ReadonlyMap<string, string>): ReportingTokens {
  const digests = [...tokens].map(([alias, token]) => ({ alias, digest: sha256(token) }));
  const forms = [...new Set([...tokens.values()].flatMap(writtenForms))]
    .filter((form) => form.length > 0)
    // The longest first, so a form that contains another is blanked whole.
    .sort((a, b) => b.length - a.length);
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
    blankIn(text) {
      return forms.reduce((blanked, form) => blanked.split(form).join(REDACTED), text);
    },
  };
}

function writtenForms(token: string): string[] {
  const bytes = Buffer.from(token, 'utf8');
  return [token, encodeURIComponent(token), bytes.toString('base64'), bytes.toString('base64url')].flatMap(
    (form) => [form, JSON.stringify(form).slice(1, -1)],
  );
}

function sha256(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
