/** Longer than any origin a browser sends; the header is the request's, so its echo is bounded. */
const MAX_LOGGED_ORIGIN_LENGTH = 300;

/**
 * A browser that posts the sign-in form saying `Sec-Fetch-Site: same-origin` with an `Origin`
 * other than APP_URL's says that the page which posted it was served at another address:
 * APP_URL is not the address people reach the service at (`http://localhost` against
 * `127.0.0.1`, a proxy's public name). Every sign-in is then refused as sent from another
 * site, which the person sees and the operator would not, so the process log says it,
 * naming both origins. Once per process: the mismatch is one fact about the deployment, and
 * a line per post, or per distinct origin (any client can send any `Origin`), would let
 * requests fill the log. A post another site sends (`cross-site`, `same-site`) is the attack
 * the check is for, and is not logged.
 */
export function createAppUrlMismatchReport(
  ownOrigin: string,
  log: (message: string) => void,
): (sentFrom: { origin: string | undefined; fetchSite: string | undefined }) => void {
  let reported = false;
  return ({ origin, fetchSite }) => {
    if (reported || fetchSite !== 'same-origin' || origin === undefined || origin === ownOrigin) return;
    reported = true;
    log(
      `Sign-in refused as sent from another site: the form was posted from ${JSON.stringify(origin.slice(0, MAX_LOGGED_ORIGIN_LENGTH))}, ` +
        `but APP_URL's origin is ${ownOrigin}. Set APP_URL to the address people open the service at; ` +
        'every sign-in from that address is refused until then (this is logged once per process)',
    );
  };
}
