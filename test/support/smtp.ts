/**
 * Mail for tests: a real SMTP server (smtp-server) on an ephemeral loopback port that keeps
 * what it receives, and a reader for the `.eml` files the embedded default writes.
 */
import { readdir, readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  /** Envelope recipients (RCPT TO). */
  to: string[];
  raw: Buffer;
  parsed: ParsedMail;
}

export interface TestSmtpServer {
  /** For SMTP_URL. */
  url: string;
  /** Messages accepted (250 after DATA), in order. */
  received: ReceivedMail[];
  /** Messages read in full and then refused (554 after DATA). */
  refused: ReceivedMail[];
  /** `rcpt`: refuse every recipient (550); `data`: read each message, then refuse it (554). */
  refuse: 'none' | 'rcpt' | 'data';
  /** Recipients refused (550) whatever `refuse` says, lower-cased. */
  refuseRecipients: Set<string>;
  close(): Promise<void>;
}

function smtpError(message: string, responseCode: number): Error {
  return Object.assign(new Error(message), { responseCode });
}

export async function startSmtpServer(): Promise<TestSmtpServer> {
  const state: Pick<TestSmtpServer, 'received' | 'refused' | 'refuse' | 'refuseRecipients'> = {
    received: [],
    refused: [],
    refuse: 'none',
    refuseRecipients: new Set(),
  };
  const server = new SMTPServer({
    // Plain SMTP on loopback: no STARTTLS (its built-in certificate is self-signed) and no AUTH.
    disabledCommands: ['STARTTLS', 'AUTH'],
    authOptional: true,
    logger: false,
    disableReverseLookup: true,
    onRcptTo(address, _session, callback) {
      if (state.refuse === 'rcpt' || state.refuseRecipients.has(address.address.toLowerCase()))
        callback(smtpError('Mailbox unavailable', 550));
      else callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks);
        simpleParser(raw).then(
          (parsed) => {
            const mail = { to: session.envelope.rcptTo.map((rcpt) => rcpt.address), raw, parsed };
            if (state.refuse === 'data') {
              state.refused.push(mail);
              callback(smtpError('Message refused', 554));
            } else {
              state.received.push(mail);
              callback();
            }
          },
          (error: Error) => callback(error),
        );
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return Object.assign(state, {
    url: `smtp://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}

/** The mail the embedded default wrote to `<logDir>/mail/*.eml`, oldest first. */
export async function readMailDir(logDir: string): Promise<{ file: string; parsed: ParsedMail }[]> {
  const dir = join(logDir, 'mail');
  let names: string[];
  try {
    names = (await readdir(dir)).filter((name) => name.endsWith('.eml')).sort();
  } catch {
    return [];
  }
  return Promise.all(
    names.map(async (name) => ({
      file: join(dir, name),
      parsed: await simpleParser(await readFile(join(dir, name))),
    })),
  );
}

/** The last message sent to `address` among `mails`. */
export function lastMailTo<T extends { parsed: ParsedMail }>(mails: T[], address: string): T {
  const found = mails.filter(({ parsed }) => recipients(parsed).includes(address.toLowerCase()));
  const last = found.at(-1);
  if (!last) throw new Error(`no mail to ${address} among ${mails.length}`);
  return last;
}

export function recipients(parsed: ParsedMail): string[] {
  const to = parsed.to === undefined ? [] : Array.isArray(parsed.to) ? parsed.to : [parsed.to];
  return to.flatMap((group) => group.value.map((entry) => (entry.address ?? '').toLowerCase()));
}

/** The link to `path` in the message's text part, and the hash it ends with. */
export function linkIn(
  parsed: ParsedMail,
  path: '/account/activate/' | '/account/reset-password/' | '/account/change-identity/',
) {
  const match = new RegExp(`(https?://[^\\s]+${path})([A-Za-z0-9_-]{43})`).exec(parsed.text ?? '');
  if (!match?.[1] || !match[2]) throw new Error(`no ${path} link in: ${parsed.text}`);
  return { url: `${match[1]}${match[2]}`, path: `${path}${match[2]}`, hash: match[2] };
}
