import type { MailMessage } from './mailer.ts';

/**
 * The messages the account flows send. Each has a plain-text and an HTML part with the same
 * content. Links point at the account pages (docs/api.md: `{ACCOUNT_PAGES_URL}/...`, by default the
 * service's own pages at the API's paths, which ask for what the message says); the hash is also
 * printed on a line of its own, short enough that no mail encoding ever wraps it.
 */

/**
 * Lines end in CRLF, as in the message itself: the quoted-printable encoder then wraps each
 * line on its own, and a line under 76 characters (the code lines) is never broken.
 */
const CRLF = '\r\n';

interface Recipient {
  identity: string;
  firstName: string | null;
  lastName: string | null;
}

interface LinkMessageOptions {
  appName: string;
  to: Recipient;
  link: string;
  hash: string;
  validForSeconds: number;
}

export function activationMessage(options: LinkMessageOptions): MailMessage {
  return linkMessage(options, {
    subject: `Activate your ${options.appName} account`,
    intro: `please confirm your e-mail address to activate your ${options.appName} account (you will be asked for the password you registered with):`,
    codeLabel: 'Activation code',
    closing: 'If you did not register, ignore this message and the account stays inactive.',
  });
}

export function passwordResetMessage(options: LinkMessageOptions): MailMessage {
  return linkMessage(options, {
    subject: `Reset your ${options.appName} password`,
    intro: `someone asked to reset the password of your ${options.appName} account. Choose a new one here:`,
    codeLabel: 'Reset code',
    closing: 'If it was not you, ignore this message: your password stays as it is.',
  });
}

/** To the new address: the link that moves the account there. */
export function identityChangeMessage(options: LinkMessageOptions): MailMessage {
  return linkMessage(options, {
    subject: `Confirm your new ${options.appName} sign-in address`,
    intro: `please confirm that this address is to become the sign-in address of your ${options.appName} account (you will be asked for its password):`,
    codeLabel: 'Confirmation code',
    closing: 'If you did not ask for this, ignore this message: nothing changes.',
  });
}

/**
 * To the old address, whether or not the new one is free (so that it tells nothing about
 * other accounts): what was asked, and what to do if it was not the holder. No link.
 */
export function identityChangeNoticeMessage(options: {
  appName: string;
  to: Recipient;
  newIdentity: string;
  validForSeconds: number;
}): MailMessage {
  const { appName, to, newIdentity } = options;
  const asked = `someone who knows the password of your ${appName} account asked to make this address its sign-in address instead of yours:`;
  const pending = `A message was sent there. Nothing changes unless the change is confirmed from it within ${duration(options.validForSeconds)}.`;
  const advice =
    'If it was not you, change your password now (whoever asked knows it); that also stops the change.';
  return {
    to: to.identity,
    subject: `A change of your ${appName} sign-in address was requested`,
    text: [`${greeting(to)},`, '', asked, '', newIdentity, '', pending, '', advice].join(CRLF),
    html: html([
      `<p>${escapeHtml(greeting(to))},</p>`,
      `<p>${escapeHtml(asked)}</p>`,
      `<p><strong>${escapeHtml(newIdentity)}</strong></p>`,
      `<p>${escapeHtml(pending)}</p>`,
      `<p>${escapeHtml(advice)}</p>`,
    ]),
  };
}

/** To a new address that already has an account: nothing was changed, and no link. */
export function addressInUseMessage(options: { appName: string; to: string }): MailMessage {
  const { appName, to } = options;
  const asked = `someone asked to make this address the sign-in address of another ${appName} account. It already has an account of its own, so nothing was changed.`;
  const advice =
    'If it was you: sign in with this address, or ask for a password reset if you forgot its password.';
  return {
    to,
    subject: `This address already has a ${appName} account`,
    text: ['Hello,', '', asked, '', advice].join(CRLF),
    html: html(['<p>Hello,</p>', `<p>${escapeHtml(asked)}</p>`, `<p>${escapeHtml(advice)}</p>`]),
  };
}

/** A message carrying a single-use link: greeting, purpose, link, validity, code, closing. */
function linkMessage(
  { to, link, hash, validForSeconds }: LinkMessageOptions,
  words: { subject: string; intro: string; codeLabel: string; closing: string },
): MailMessage {
  const validity = `The link can be used once and expires in ${duration(validForSeconds)}.`;
  return {
    to: to.identity,
    subject: words.subject,
    text: [
      `${greeting(to)},`,
      '',
      words.intro,
      '',
      link,
      '',
      validity,
      '',
      `${words.codeLabel}: ${hash}`,
      '',
      words.closing,
    ].join(CRLF),
    html: html([
      `<p>${escapeHtml(greeting(to))},</p>`,
      `<p>${escapeHtml(words.intro)}</p>`,
      `<p><a href="${escapeHtml(link)}">${escapeHtml(link)}</a></p>`,
      `<p>${escapeHtml(validity)}</p>`,
      `<p>${escapeHtml(words.codeLabel)}: <code>${escapeHtml(hash)}</code></p>`,
      `<p>${escapeHtml(words.closing)}</p>`,
    ]),
  };
}

export function identityReminderMessage(options: { appName: string; to: Recipient }): MailMessage {
  const { appName, to } = options;
  return {
    to: to.identity,
    subject: `Your ${appName} sign-in identity`,
    text: [
      `${greeting(to)},`,
      '',
      `you asked which identity you sign in to ${appName} with. It is:`,
      '',
      to.identity,
      '',
      'If you also forgot your password, ask for a password reset.',
    ].join(CRLF),
    html: html([
      `<p>${escapeHtml(greeting(to))},</p>`,
      `<p>you asked which identity you sign in to ${escapeHtml(appName)} with. It is:</p>`,
      `<p><strong>${escapeHtml(to.identity)}</strong></p>`,
      '<p>If you also forgot your password, ask for a password reset.</p>',
    ]),
  };
}

function greeting(to: Recipient): string {
  const name = [to.firstName, to.lastName].filter(Boolean).join(' ');
  return name ? `Hello ${name}` : 'Hello';
}

function html(paragraphs: string[]): string {
  return ['<!doctype html>', '<html><body>', ...paragraphs, '</body></html>'].join(CRLF);
}

function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/** "24 hours", "1 hour", "90 minutes": whole hours when it divides evenly. */
export function duration(seconds: number): string {
  if (seconds % 3600 === 0) return plural(seconds / 3600, 'hour');
  if (seconds % 60 === 0) return plural(seconds / 60, 'minute');
  return plural(seconds, 'second');
}

function plural(n: number, unit: string): string {
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}
