import type { IncomingMessage } from 'node:http';

/**
 * Whether a request is one a page answers rather than the API: a GET whose `Accept` prefers
 * `text/html` to JSON (a browser opening a link), or a POST of a form (a page's form).
 */
export function asksForPage(req: IncomingMessage, method: string): boolean {
  if (method === 'POST') return mediaType(req.headers['content-type']) === FORM;
  return prefersHtml(req.headers.accept);
}

const FORM = 'application/x-www-form-urlencoded';

function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';', 1)[0]?.trim().toLowerCase() ?? '';
}

/**
 * RFC 9110 §12.5.1: each media type takes the quality of the most specific range that matches
 * it. A browser asks for `text/html,…,*\/*;q=0.8`; a JSON client for `application/json`, and
 * one that sends nothing or `*\/*` prefers neither, so it gets the API. One pass over the
 * header, splitting on fixed characters: linear in its length.
 */
export function prefersHtml(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  const html = { type: 'text', subtype: 'html', quality: 0, specificity: -1 };
  const json = { type: 'application', subtype: 'json', quality: 0, specificity: -1 };
  for (const element of accept.split(',')) {
    const [range = '', ...parameters] = element.split(';');
    const [type = '', subtype = ''] = range.trim().toLowerCase().split('/');
    let quality = 1;
    for (const parameter of parameters) {
      const [name = '', value = ''] = parameter.split('=');
      if (name.trim().toLowerCase() === 'q') quality = Number(value.trim());
    }
    if (!Number.isFinite(quality) || quality < 0 || quality > 1) continue;
    for (const wanted of [html, json]) {
      const specificity =
        type === wanted.type && subtype === wanted.subtype
          ? 2
          : type === wanted.type && subtype === '*'
            ? 1
            : type === '*' && subtype === '*'
              ? 0
              : -1;
      if (specificity > wanted.specificity) Object.assign(wanted, { quality, specificity });
    }
  }
  return html.quality > 0 && html.quality > json.quality;
}
