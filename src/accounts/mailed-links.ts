import { NotFound } from '../errors.ts';
import type { Mailer, MailMessage } from '../mail/mailer.ts';
import { digestOneTimeSecret, isOneTimeSecretShaped, newOneTimeSecret } from '../one-time-secrets.ts';
import {
  type Account,
  identityKey,
  type OneTimeToken,
  type OneTimeTokenPurpose,
  type OneTimeTokenStore,
} from './model.ts';

/**
 * `{linkBase}{path}{hash}`: under the default base, `{APP_URL}/account`, the page (and API
 * route) each kind of link is used with.
 */
const LINK_PATHS: Record<OneTimeTokenPurpose, string> = {
  activation: '/activate/',
  reset: '/reset-password/',
  'identity-change': '/change-identity/',
};

const LINK_NAMES: Record<OneTimeTokenPurpose, string> = {
  activation: 'activation link',
  reset: 'password reset link',
  'identity-change': 'change of address link',
};

export type MailedLinks = ReturnType<typeof createMailedLinks>;

/**
 * The single-use, expiring links mailed to account holders: made, mailed, and found again
 * from the hash a client presents. Only the digest of a hash is stored.
 */
export function createMailedLinks(deps: {
  oneTimeTokens: OneTimeTokenStore;
  mailer: Mailer;
  /** ACCOUNT_PAGES_URL, without a trailing `/`. */
  linkBase: string;
  /** Seconds each kind of link stays valid. */
  ttl: Readonly<Record<OneTimeTokenPurpose, number>>;
  now: () => Date;
}) {
  const { oneTimeTokens, mailer } = deps;
  const invalid = (purpose: OneTimeTokenPurpose) =>
    new NotFound(`This ${LINK_NAMES[purpose]} is invalid, has expired or was already used`);

  return {
    ttl: deps.ttl,

    /**
     * Stores a new link for the account and sends, in order, the messages `compose` makes of
     * it. If one cannot be sent, the link is deleted before the failure propagates, so no
     * message that went out can act. `newIdentity` travels with a change of address link,
     * which goes to that address; every other link records the account's identity it goes to
     * (see `actsOn`).
     */
    async mail(
      purpose: OneTimeTokenPurpose,
      account: Account,
      compose: (link: string, hash: string) => MailMessage[],
      newIdentity?: string,
    ): Promise<void> {
      const { secret: hash, digest } = newOneTimeSecret();
      const expiresAt = new Date(deps.now().getTime() + deps.ttl[purpose] * 1000);
      const token: OneTimeToken = { purpose, digest, accountId: account.id, expiresAt };
      await oneTimeTokens.save(
        newIdentity === undefined ? { ...token, mailedTo: account.identity } : { ...token, newIdentity },
      );
      try {
        for (const message of compose(`${deps.linkBase}${LINK_PATHS[purpose]}${hash}`, hash))
          await mailer.send(message);
      } catch (error) {
        await oneTimeTokens.consume(purpose, digest).catch(() => undefined);
        throw error;
      }
    },

    /**
     * The unexpired token behind a link hash, found or used up (atomically: of concurrent
     * uses one wins), and the 404 that names what is wrong with such a link.
     */
    async token(
      purpose: OneTimeTokenPurpose,
      hash: string,
      use: 'find' | 'consume',
    ): Promise<{ token: OneTimeToken; invalid: NotFound }> {
      const refusal = invalid(purpose);
      if (!isOneTimeSecretShaped(hash)) throw refusal;
      const digest = digestOneTimeSecret(hash);
      const token = await (use === 'find'
        ? oneTimeTokens.find(purpose, digest)
        : oneTimeTokens.consume(purpose, digest));
      if (!token) throw refusal;
      return { token, invalid: refusal };
    },

    /**
     * Whether the link may act on the account as it is now: the account still has the address
     * the link was mailed to. A change of address kills the account's links before it writes,
     * but a link asked for under the old address while the move is under way is saved after
     * that kill, alive; this is what keeps it from acting on the moved account (whoever reads
     * the old mailbox is told of the move). Links saved before the address was recorded act.
     */
    actsOn(token: OneTimeToken, account: Account): boolean {
      return token.mailedTo === undefined || identityKey(token.mailedTo) === identityKey(account.identity);
    },

    /**
     * Puts back a link that a use took and then could not complete (a write failed, or a
     * check that must not use the link up refused), so that its holder can try again. It
     * stays dead if the account's links were killed while the use held it (the store keeps
     * the generation it was issued in). A link that cannot be put back is lost, as if used:
     * the holder asks for a new one.
     */
    async putBack(token: OneTimeToken): Promise<void> {
      await oneTimeTokens.putBack(token).catch(() => undefined);
    },
  };
}
