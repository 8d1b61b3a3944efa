import type { IncomingMessage } from 'node:http';
import { BadRequest, PayloadTooLarge, UnsupportedMediaType } from '../errors.ts';

/** A form body keeps repeated keys as arrays so the token endpoint can refuse them (RFC 6749 §3.2). */
export type ParsedBody = Record<string, unknown> | unknown[] | string | number | boolean | null | undefined;

/**
 * Reads the request body within `limit` bytes and parses JSON (`application/json`,
 * `application/*+json`) or `application/x-www-form-urlencoded`, or only those of `accepted`
 * when given. No body gives `undefined`.
 */
export async function parseBody(
  req: IncomingMessage,
  limit: number,
  accepted?: readonly string[],
): Promise<ParsedBody> {
  const declared = req.headers['content-length'];
  if (declared === undefined && req.headers['transfer-encoding'] === undefined) return undefined;
  if (declared !== undefined && Number(declared) > limit) throw new PayloadTooLarge(limit);
  const raw = await readWithin(req, limit);
  if (raw.length === 0) return undefined;
  const mediaType = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (accepted && !accepted.includes(mediaType)) throw new UnsupportedMediaType(mediaType || '(none)');
  if (mediaType === 'application/json' || /^application\/[\w.-]+\+json$/.test(mediaType))
    return parseJson(raw);
  if (mediaType === 'application/x-www-form-urlencoded') return parseForm(raw);
  throw new UnsupportedMediaType(mediaType || '(none)');
}

async function readWithin(req: IncomingMessage, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new PayloadTooLarge(limit);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseJson(raw: string): ParsedBody {
  try {
    return JSON.parse(raw) as ParsedBody;
  } catch {
    throw new BadRequest('The request body is not valid JSON');
  }
}

function parseForm(raw: string): Record<string, unknown> {
  return searchParamsObject(new URLSearchParams(raw));
}

/**
 * Parameters as an object; a repeated name becomes an array. Built through a Map and
 * Object.fromEntries, because names come from the client (`__proto__`, `constructor`).
 */
export function searchParamsObject(params: URLSearchParams): Record<string, string | string[]> {
  const result = new Map<string, string | string[]>();
  for (const name of new Set(params.keys())) {
    const values = params.getAll(name);
    result.set(name, values.length === 1 ? (values[0] ?? '') : values);
  }
  return Object.fromEntries(result);
}
