/**
 * The forms of the service's pages (the sign-in, the account pages) are posted by those pages
 * alone: what the browser says about where a post comes from.
 */

/** Where the browser says a post comes from: its `Origin` and `Sec-Fetch-Site` headers. */
export interface SentFrom {
  origin: string | undefined;
  fetchSite: string | undefined;
}

/**
 * Login CSRF: a page of another site posting the sign-in form, with a value it fetched itself,
 * would sign the person's browser in to the attacker's account (and an account page's form, act
 * for the person). Only the service's own pages post its forms, so a browser that says where a
 * post comes from must say it is this origin: a `Sec-Fetch-Site` other than `same-origin` (or
 * `none`, a person's own doing) is refused, and so is an `Origin` other than APP_URL's, `null`
 * included (sent by sandboxed frames and pages that hide their origin, which an attacker can
 * choose). `same-site` is refused too: a sibling subdomain is another application. A post that says neither is no browser's, or a
 * browser too old to say; the one-time value still guards it.
 */
export function isCrossSitePost(sentFrom: SentFrom, ownOrigin: string): boolean {
  const { origin, fetchSite } = sentFrom;
  if (fetchSite !== undefined && fetchSite !== 'same-origin' && fetchSite !== 'none') return true;
  return origin !== undefined && origin !== ownOrigin;
}
