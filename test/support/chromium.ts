/**
 * The browser the browser suites drive: Debian's headless `chromium` (which .ci/run installs)
 * through playwright-core. A suite without it is skipped, saying why.
 */
import { accessSync, constants } from 'node:fs';

export const CHROMIUM = '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Why the suite named `suite` cannot run here (printed), or false when Chromium is installed. */
export function chromiumMissing(suite: string): string | false {
  try {
    accessSync(CHROMIUM, constants.X_OK);
    return false;
  } catch {
    const reason = `${CHROMIUM} is not installed (Debian package chromium; .ci/run installs it): ${suite} is skipped`;
    console.log(`# ${reason}`);
    return reason;
  }
}
