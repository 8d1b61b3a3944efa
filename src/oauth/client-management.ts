import { type Actor, type Role, requirePermission } from '../caller.ts';
import { Conflict, NotFound, ValidationFailed } from '../errors.ts';
import type { RuleLock } from '../rule-lock.ts';
import { compileValidator } from '../validation.ts';
import { newClientRecord } from './client-record.ts';
import { type ClientUpdate, CreateClientBody, type NewClient, UpdateClientBody } from './client-schemas.ts';
import {
  clearExpiredSecret,
  DEFAULT_SECRET_OVERLAP_SECONDS,
  digestClientSecret,
  newClientSecret,
  RETIRE_PREVIOUS_SECRET,
  rotateSecret,
} from './client-secrets.ts';
import type { ClientChanges, ClientStore, ClientType, GrantType, OAuthClient } from './model.ts';
import { redirectUriProblem } from './redirect-uri.ts';

/** Every caller's input is checked here, the API's and the command line's alike. */
const validateNewClient = compileValidator<NewClient>(CreateClientBody);
const validateUpdate = compileValidator<ClientUpdate>(UpdateClientBody);

/** Who registers, changes and deletes clients: they decide who may sign people in. */
export const CLIENT_MANAGERS: readonly Role[] = ['superuser'];

/** The grants a client without a secret may use; the others need client authentication. */
const PUBLIC_CLIENT_GRANTS: readonly GrantType[] = ['authorization_code', 'refresh_token'];

/** The grants that sign a person in; without one, a client signs nobody in. */
const SIGN_IN_GRANTS: readonly GrantType[] = ['authorization_code', 'password'];

/**
 * The lease every change of a client takes (rule-lock.ts). It keeps the name it had when it
 * guarded only the last client that signs administrators in, so that during a rolling update
 * the nodes of both versions take the same lease.
 */
const CLIENT_CHANGES_RULE = 'admin-sign-in-clients';

/** A client, and its secret when this very operation made one: it is never shown again. */
export interface ClientWithSecret {
  client: OAuthClient;
  secret?: string;
}

export type ClientManagement = ReturnType<typeof createClientManagement>;

/**
 * The registration of OAuth clients, by superusers (the API) and the operator (the CLI).
 * Secrets are generated here, 256 random bits, and only their digest is kept. Every input is
 * checked here, whoever gives it.
 */
export function createClientManagement(deps: { clients: ClientStore; ruleLock: RuleLock; now?: () => Date }) {
  const { clients, ruleLock } = deps;
  const now = deps.now ?? (() => new Date());

  async function existing(name: string): Promise<OAuthClient> {
    const client = await clients.findByName(name);
    if (!client) throw new NotFound('No such client');
    return client;
  }

  /**
   * Runs a change of the client `name` in turn with every other change of a client, on every
   * node: `decide` sees the clients as stored now (a list is never cached), checks, and returns
   * the write. So a rotation keeps as the previous secret the one that is current when it
   * writes (of two rotations at once, the second keeps the first one's secret), and of two
   * changes that each take a client away from signing administrators in, the second counts
   * the first one's result.
   */
  function changeInTurn<T>(
    name: string,
    decide: (target: OAuthClient, all: readonly OAuthClient[]) => () => Promise<T>,
  ): Promise<T> {
    const check = async () => {
      const all = await clients.list();
      const target = all.find((client) => client.name === name);
      if (!target) throw new NotFound('No such client');
      return decide(target, all);
    };
    return ruleLock.inTurn(CLIENT_CHANGES_RULE, check, (write) => write());
  }

  return {
    list(actor: Actor): Promise<OAuthClient[]> {
      requirePermission(actor, CLIENT_MANAGERS);
      return clients.list();
    },

    view(actor: Actor, name: string): Promise<OAuthClient> {
      requirePermission(actor, CLIENT_MANAGERS);
      return existing(name);
    },

    /** A confidential client's secret is in the answer, and nowhere else ever. */
    async create(actor: Actor, input: unknown): Promise<ClientWithSecret> {
      requirePermission(actor, CLIENT_MANAGERS);
      const fields = validateNewClient.check(input);
      const redirectUris = fields.redirectUris ?? [];
      assertConsistent(fields.type, fields.grants, redirectUris);
      const secret = fields.type === 'confidential' ? newClientSecret() : undefined;
      const client = newClientRecord(
        {
          name: fields.name,
          type: fields.type,
          secretDigest: secret === undefined ? null : digestClientSecret(secret),
          accountKind: fields.accounts,
          redirectUris,
          grants: fields.grants,
        },
        now(),
      );
      if (!(await clients.createIfAbsent(client)))
        throw new Conflict(`A client named "${fields.name}" already exists`);
      return { client, secret };
    },

    /**
     * Redirect URIs and grants; `rotateSecret` gives a confidential client a new secret, shown
     * once, and keeps the one before it for the overlap; `retirePreviousSecret` ends the
     * overlap now.
     */
    async update(actor: Actor, name: string, input: unknown): Promise<ClientWithSecret> {
      requirePermission(actor, CLIENT_MANAGERS);
      const change = validateUpdate.check(input);
      assertSecretChange(change);
      return changeInTurn(name, (target, all) => {
        if (target.type === 'public') {
          for (const field of ['rotateSecret', 'retirePreviousSecret'] as const)
            if (change[field]) throw new ValidationFailed({ [field]: ['A public client has no secret'] });
        }
        const grants = change.grants ?? target.grants;
        assertConsistent(target.type, grants, change.redirectUris ?? target.redirectUris);
        if (change.grants !== undefined) assertAdminSignInRemains(all, target, grants);
        const at = now();
        const changes: ClientChanges = { updatedAt: at, ...clearExpiredSecret(target, at) };
        if (change.grants !== undefined) changes.grants = [...change.grants];
        if (change.redirectUris !== undefined) changes.redirectUris = [...change.redirectUris];
        let secret: string | undefined;
        if (change.rotateSecret) {
          const overlap = change.previousSecretOverlapSeconds ?? DEFAULT_SECRET_OVERLAP_SECONDS;
          const rotation = rotateSecret(target, overlap, at);
          secret = rotation.secret;
          Object.assign(changes, rotation.changes);
        }
        if (change.retirePreviousSecret) Object.assign(changes, RETIRE_PREVIOUS_SECRET);
        return async () => {
          const updated = await clients.update(name, changes);
          if (!updated) throw new NotFound('No such client');
          return { client: updated, secret };
        };
      });
    },

    /**
     * Its refresh tokens and codes die with it: the token endpoint authenticates the client
     * before it reads a token, and a client registered again under the name has another id,
     * which the tokens and codes of the old one do not carry.
     */
    async remove(actor: Actor, name: string): Promise<void> {
      requirePermission(actor, CLIENT_MANAGERS);
      await changeInTurn(name, (target, all) => {
        assertAdminSignInRemains(all, target, null);
        return async () => {
          if (!(await clients.delete(name))) throw new NotFound('No such client');
        };
      });
    },
  };
}

/**
 * Administrators sign in through a client too: the last client that signs them in cannot go
 * (`grants` null) or lose its sign-in grants, or nobody could administer the service through
 * the API any more. Counted among the clients as stored now, by a change made in turn.
 */
function assertAdminSignInRemains(
  all: readonly OAuthClient[],
  target: OAuthClient,
  grants: readonly GrantType[] | null,
): void {
  const signsInAdmins = (client: OAuthClient, clientGrants: readonly GrantType[] = client.grants) =>
    client.accountKind === 'admin' && clientGrants.some((grant) => SIGN_IN_GRANTS.includes(grant));
  if (!signsInAdmins(target) || (grants !== null && signsInAdmins(target, grants))) return;
  if (!all.some((client) => client.name !== target.name && signsInAdmins(client)))
    throw new Conflict('The last client that signs administrators in cannot be deleted or lose that grant');
}

/** The members about the secrets that make sense only together, or not together. */
function assertSecretChange(change: ClientUpdate): void {
  if (change.previousSecretOverlapSeconds !== undefined && change.rotateSecret !== true)
    throw new ValidationFailed({ previousSecretOverlapSeconds: ['Only with rotateSecret'] });
  if (change.rotateSecret && change.retirePreviousSecret)
    throw new ValidationFailed({
      retirePreviousSecret: ['Not with rotateSecret: rotate with previousSecretOverlapSeconds 0 instead'],
    });
}

/** The rules between the fields of a client; a break is a 400 naming the field. */
function assertConsistent(type: ClientType, grants: readonly GrantType[], redirectUris: readonly string[]) {
  if (type === 'public' && !grants.every((grant) => PUBLIC_CLIENT_GRANTS.includes(grant)))
    throw new ValidationFailed({
      grants: [`A public client has no secret, so it may use only ${PUBLIC_CLIENT_GRANTS.join(' and ')}`],
    });
  if (grants.includes('authorization_code') && redirectUris.length === 0)
    throw new ValidationFailed({ redirectUris: ['The authorization_code grant needs at least one'] });
  const errors = new Map<string, string[]>();
  redirectUris.forEach((uri, index) => {
    const problem = redirectUriProblem(uri, type);
    if (problem !== null) errors.set(`redirectUris.${index}`, [problem]);
  });
  if (errors.size > 0) throw new ValidationFailed(Object.fromEntries(errors));
}
