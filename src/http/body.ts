import type { IncomingMessage } from 'node:http';
import { BadRequest, PayloadTooLarge, RequestAborted, UnsupportedMediaType } from '../errors.ts';

/** A form body keeps repeated keys as arrays so the token endpoint can refuse them (RFC 6749 §3.2). */
export type ParsedBody = Record<string, unknown> | unknown[] | string | number | boolean | null | undefined;

/**
 * What a route takes unless it lists its media types: JSON alone. A form body (or any other
 * type a page may post cross-origin without a CORS preflight) would let any web page drive the
 * route from its visitors' browsers.
 */
export const JSON_ONLY: readonly string[] = ['application/json'];

/**
 * Reads the request body within `limit` bytes and parses it if its media type is one of
 * `accepted` (`application/json` standing for `application/*+json` too): JSON, or
 * `application/x-www-form-urlencoded`. Any other type is 415. No body gives `undefined`.
 */
export async function parseBody(
  req: IncomingMessage,
  limit: number,
  accepted: readonly string[] = JSON_ONLY,
): Promise<ParsedBody> {
  const declared = req.headers['content-length'];
  if (declared === undefined && req.headers['transfer-encoding'] === undefined) return undefined;
  if (declared !== undefined && Number(declared) > limit) throw new PayloadTooLarge(limit);
  const raw = await readWithin(req, limit);
  if (raw.length === 0) return undefined;
  const mediaType = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  const isJson = mediaType === 'application/json' || /^application\/[\w.-]+\+json$/.test(mediaType);
  if (isJson && accepted.includes('application/json')) return parseJson(raw);
  if (mediaType === 'application/x-www-form-urlencoded' && accepted.includes(mediaType))
    return parseForm(raw);
  throw new UnsupportedMediaType(mediaType || '(none)');
}

async function readWithin(req: IncomingMessage, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limit) throw new PayloadTooLarge(limit);
      chunks.push(chunk);
    }
  } catch (error) {
    // Leaving the loop destroys the request, so the size refusal must be told apart first.
    if (error instanceof PayloadTooLarge) throw error;
    // A client that hangs up mid-upload is not a server error: nothing to log, no one to answer.
    if (req.readableAborted || (error as NodeJS.ErrnoException).code === 'ECONNRESET')
      throw new RequestAborted();
    throw error;
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

/**
 * More fields than any request of this API has, by an order of magnitude. Bodies are parsed
 * before authentication, so the cap keeps an anonymous body of many tiny fields cheap.
 */
export const MAX_FIELDS = 256;

function parseForm(raw: string): Record<string, unknown> {
  // Counting separators first refuses a flood of fields before URLSearchParams builds them.
  let separators = 0;
  for (let at = raw.indexOf('&'); at !== -1; at = raw.indexOf('&', at + 1)) {
    if (++separators >= MAX_FIELDS) throw new TooManyFields();
  }
  return searchParamsObject(new URLSearchParams(raw));
}

class TooManyFields extends BadRequest {
  constructor() {
    super(`A form body has at most ${MAX_FIELDS} fields`);
  }
}

/**
 * Parameters as an object; a repeated name becomes an array. One pass, so the time is linear
 * in the number of fields (a `getAll` per name would be quadratic). Built through a Map and
 * Object.fromEntries, because names come from the client (`__proto__`, `constructor`).
 */
export function searchParamsObject(params: URLSearchParams): Record<string, string | string[]> {
  const result = new Map<string, string | string[]>();
  let fields = 0;
  for (const [name, value] of params) {
    if (++fields > MAX_FIELDS) throw new TooManyFields();
    const earlier = result.get(name);
    if (earlier === undefined) result.set(name, value);
    else if (Array.isArray(earlier)) earlier.push(value);
    else result.set(name, [earlier, value]);
  }
  return Object.fromEntries(result);
}
