import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import { ServiceUnavailable } from '../errors.ts';
import { hostOf, messageWithoutPassword } from '../logging/redact-url.ts';

/** One message to one recipient, with a plain-text and an HTML part. */
export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
}

/**
 * Sends mail synchronously inside the request (docs/api.md: no queue, no retry). Any transport
 * failure becomes a 503 problem, so the caller can undo what it prepared and the client can
 * simply retry.
 */
export interface Mailer {
  send(message: MailMessage): Promise<void>;
  close(): Promise<void>;
}

export interface MailerOptions {
  /** `smtp://` or `smtps://` URL; unset: every message is written as an `.eml` file to `mailDir`. */
  smtpUrl: string | undefined;
  from: string;
  mailDir: string;
  /** Told about every failed delivery (the client only learns that it failed). */
  onFailure?: (reason: string) => void;
}

/**
 * Timeouts for the SMTP conversation. nodemailer's own defaults (2 minutes to connect, 10 of
 * socket inactivity) are made for background senders; a request waits on this one. The same
 * option in the URL query (`?connectionTimeout=...`) wins.
 */
const SMTP_DEFAULTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 20_000 };

/** `smtp://` upgrades with STARTTLS when the server offers it, `smtps://` uses TLS from the start. */
const SMTP_PROTOCOLS = ['smtp:', 'smtps:'];

/** Throws an Error saying why `url` names no SMTP server, never quoting it: it carries a password. */
export function checkSmtpUrl(url: string): void {
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    throw new Error('is not a valid URL');
  }
  if (!SMTP_PROTOCOLS.includes(protocol)) throw new Error(`must use ${SMTP_PROTOCOLS.join(' or ')}`);
}

export function createMailer(options: MailerOptions): Mailer {
  return options.smtpUrl ? smtpMailer(options, options.smtpUrl) : fileMailer(options);
}

function smtpMailer(options: MailerOptions, smtpUrl: string): Mailer {
  // Values parsed from the URL take precedence over the other keys of this object.
  const transport = nodemailer.createTransport({ ...SMTP_DEFAULTS, url: smtpUrl }, { from: options.from });
  return {
    async send(message) {
      try {
        await transport.sendMail(message);
      } catch (error) {
        throw undelivered(options, error, smtpUrl);
      }
    },
    async close() {
      transport.close();
    },
  };
}

/**
 * The embedded default: each message, fully composed (headers, text and HTML parts), is
 * written to `<mailDir>/<time>-<random>.eml`, which any mail client opens.
 */
function fileMailer(options: MailerOptions): Mailer {
  const transport = nodemailer.createTransport(
    { streamTransport: true, buffer: true },
    { from: options.from },
  );
  return {
    async send(message) {
      try {
        const info = await transport.sendMail(message);
        await mkdir(options.mailDir, { recursive: true });
        const name = `${new Date().toISOString().replace(/[:.]/g, '-')}-${randomBytes(4).toString('hex')}.eml`;
        await writeFile(join(options.mailDir, name), info.message as Buffer, { flag: 'wx', mode: 0o600 });
      } catch (error) {
        throw undelivered(options, error, undefined);
      }
    },
    async close() {
      transport.close();
    },
  };
}

function undelivered(
  options: MailerOptions,
  error: unknown,
  smtpUrl: string | undefined,
): ServiceUnavailable {
  const reason = messageWithoutPassword(error, smtpUrl);
  options.onFailure?.(`Mail via ${smtpUrl ? hostOf(smtpUrl) : options.mailDir} failed: ${reason}`);
  return Object.assign(new ServiceUnavailable('The mail could not be sent; try again later'), {
    cause: error,
  });
}
