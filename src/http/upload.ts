import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { Busboy, type BusboyFileStream } from '@fastify/busboy';
import { BadRequest, PayloadTooLarge, Problem, RequestAborted, UnsupportedMediaType } from '../errors.ts';

/**
 * A file upload, read into memory as it arrives and never past its limit: nothing of it
 * touches a disk. It comes as `multipart/form-data`, the file in one named field (what a
 * browser form or `FormData` sends), or as the raw body in one of the accepted media types.
 * Routes that take one say so (`upload` in the route table), and the pipeline leaves their
 * body unread for the handler, which checks who may upload before it reads anything.
 */
export interface UploadOptions {
  /** The form field that carries the file. */
  field: string;
  /** Largest file, bytes. */
  maxBytes: number;
  /** The media types a raw body may declare, besides `multipart/form-data`. */
  rawTypes: readonly string[];
}

export const MULTIPART = 'multipart/form-data';

/**
 * What a form may add around its file: part delimiters, and the headers and values of the
 * few parts it may have (LIMITS), each truncated at its bound. A body larger than the file
 * limit plus this is refused (413) before it is parsed.
 */
export const MULTIPART_ALLOWANCE = 16 * 1024;

/**
 * Busboy's limits, per form: one file, a few small fields besides it (a browser form may send
 * a button or a hidden input; they are ignored), bounded part headers. Busboy finds the part
 * delimiters with Boyer-Moore-Horspool and reads each header block once, so a form is
 * parsed in one pass over its bytes.
 */
const LIMITS = {
  files: 1,
  fields: 4,
  parts: 5,
  fieldNameSize: 100,
  fieldSize: 1024,
  headerPairs: 8,
  headerSize: 1024,
};

/** The uploaded file's bytes, or a refusal: 400, 413 (the file or the body too large), 415. */
export async function readUpload(req: IncomingMessage, options: UploadOptions): Promise<Uint8Array> {
  const declared = req.headers['content-length'];
  if ((declared === undefined || declared === '0') && req.headers['transfer-encoding'] === undefined)
    throw new BadRequest('The request has no body');
  const contentType = req.headers['content-type'] ?? '';
  const mediaType = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  const multipart = mediaType === MULTIPART;
  if (!multipart && !options.rawTypes.includes(mediaType))
    throw new UnsupportedMediaType(mediaType || '(none)');
  const bodyLimit = options.maxBytes + (multipart ? MULTIPART_ALLOWANCE : 0);
  if (declared !== undefined && Number(declared) > bodyLimit) throw new PayloadTooLarge(bodyLimit);
  const tooLarge = new Problem(413, `The ${options.field} exceeds ${options.maxBytes} bytes`);
  return multipart
    ? readFormFile(req, contentType, options, bodyLimit, tooLarge)
    : collect(req, options.maxBytes, tooLarge);
}

/** The one file of a form, in the named field. */
function readFormFile(
  req: IncomingMessage,
  contentType: string,
  options: UploadOptions,
  bodyLimit: number,
  tooLarge: Problem,
): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    let parser: ReturnType<typeof Busboy>;
    try {
      parser = Busboy({
        headers: { ...req.headers, 'content-type': contentType },
        limits: { ...LIMITS, fileSize: options.maxBytes },
        // The named field is the file whatever its part declares; any other part with a file
        // name is a file too, and refused.
        isPartAFile: (name, _type, fileName) => name === options.field || fileName !== undefined,
      });
    } catch (error) {
      reject(new BadRequest(`The form cannot be read: ${(error as Error).message}`));
      return;
    }
    let file: Promise<Uint8Array> | undefined;
    let received = 0;
    let settled = false;
    /** Ends the reading with a refusal: the rest of the body is let through unread. */
    const refuse = (problem: Problem) => {
      if (settled) return;
      settled = true;
      req.unpipe(parser);
      req.off('data', count);
      req.resume();
      reject(problem);
    };
    const count = (chunk: Buffer) => {
      received += chunk.length;
      if (received > bodyLimit) refuse(new PayloadTooLarge(bodyLimit));
    };
    parser.on('file', (name: string, stream: BusboyFileStream) => {
      if (name !== options.field) {
        stream.resume();
        refuse(new BadRequest(`The form's file must be in the field "${options.field}"`));
        return;
      }
      file = collect(stream, options.maxBytes, tooLarge);
      file.catch(refuse);
    });
    parser.on('filesLimit', () => refuse(new BadRequest('The form has more than one file')));
    parser.on('partsLimit', () => refuse(new BadRequest('The form has too many parts')));
    parser.on('fieldsLimit', () => refuse(new BadRequest('The form has too many fields')));
    parser.on('error', (error: unknown) =>
      refuse(new BadRequest(`The form cannot be read: ${(error as Error).message}`)),
    );
    parser.on('finish', () => {
      if (!file) refuse(new BadRequest(`The form has no file in the field "${options.field}"`));
      else
        file.then((bytes) => {
          if (settled) return;
          settled = true;
          resolve(bytes);
        }, refuse);
    });
    onAbort(req, () => refuse(new RequestAborted()));
    req.on('data', count);
    req.pipe(parser);
  });
}

/**
 * The bytes of a stream, refused with `tooLarge` as soon as they exceed `max` (busboy marks a
 * file stream cut at its limit with a `limit` event). A refused stream is drained, not
 * destroyed: the client still hears the answer.
 */
function collect(stream: Readable, max: number, tooLarge: Problem): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const refuse = () => {
      stream.off('data', take);
      stream.resume();
      reject(tooLarge);
    };
    const take = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) refuse();
      else chunks.push(chunk);
    };
    stream.on('data', take);
    stream.on('limit', refuse);
    stream.on('end', () => {
      if (size <= max) resolve(Buffer.concat(chunks));
    });
    stream.on('error', () => reject(new RequestAborted()));
    if ('complete' in stream) onAbort(stream as IncomingMessage, () => reject(new RequestAborted()));
  });
}

/** A client that hangs up mid-upload: nothing to log, no one to answer. */
function onAbort(req: IncomingMessage, abort: () => void): void {
  req.on('close', () => {
    if (!req.complete) abort();
  });
}
