import { randomBytes } from 'node:crypto';
import { Conflict, NotFound, ValidationFailed } from '../errors.ts';
import { type Actor, type Role, requirePermission } from '../identity.ts';
import type { RuleLock } from '../rule-lock.ts';
import { digestClientSecret } from './client-authentication.ts';
import { newClientRecord } from './client-record.ts';
import type { ClientUpdate, NewClient } from './client-schemas.ts';
import type { ClientChanges, ClientStore, ClientType, GrantType, OAuthClient } from './model.ts';
import { redirectUriProblem } from './redirect-uri.ts';

/** Who registers, changes and deletes clients: they decide who may sign people in. */
export const CLIENT_MANAGERS: readonly Role[] = ['superuser'];

/** The grants a client without a secret may use; the others need client authentication. */
const PUBLIC_CLIENT_GRANTS: readonly GrantType[] = ['authorization_code', 'refresh_token'];

/** The grants that sign a person in; without one, a client signs nobody in. */
const SIGN_IN_GRANTS: readonly GrantType[] = ['authorization_code', 'password'];

/** A client, and its secret when this very operation made one: it is never shown again. */
export interface ClientWithSecret {
  client: OAuthClient;
  secret?: string;
}

export type ClientManagement = ReturnType<typeof createClientManagement>;

/**
 * The registration of OAuth clients, by superusers (the API) and the operator (the CLI).
 * Secrets are generated here, 256 random bits, and only their digest is kept.
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
   * Administrators sign in through a client too: the last client that signs them in cannot
   * go (`grants` null) or lose its sign-in grants, or nobody could administer the service
   * through the API any more. Such changes run in turn on every node, and check the clients
   * as stored now (a list is never cached): no two of them can each count on the other's
   * client remaining.
   */
  function keepingAdminSignIn<T>(
    name: string,
    grants: GrantType[] | null,
    change: () => Promise<T>,
  ): Promise<T> {
    const signsInAdmins = (client: OAuthClient, clientGrants = client.grants) =>
      client.accountKind === 'admin' && clientGrants.some((grant) => SIGN_IN_GRANTS.includes(grant));
    const check = async () => {
      const all = await clients.list();
      const target = all.find((client) => client.name === name);
      if (!target) throw new NotFound('No such client');
      if (!signsInAdmins(target) || (grants !== null && signsInAdmins(target, grants))) return;
      if (!all.some((client) => client.name !== name && signsInAdmins(client)))
        throw new Conflict(
          'The last client that signs administrators in cannot be deleted or lose that grant',
        );
    };
    return ruleLock.inTurn('admin-sign-in-clients', check, change);
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
    async create(actor: Actor, input: NewClient): Promise<ClientWithSecret> {
      requirePermission(actor, CLIENT_MANAGERS);
      const redirectUris = input.redirectUris ?? [];
      assertConsistent(input.type, input.grants, redirectUris);
      const secret = input.type === 'confidential' ? newClientSecret() : undefined;
      const client = newClientRecord(
        {
          name: input.name,
          type: input.type,
          secretDigest: secret === undefined ? null : digestClientSecret(secret),
          accountKind: input.accounts,
          redirectUris,
          grants: input.grants,
        },
        now(),
      );
      if (!(await clients.createIfAbsent(client)))
        throw new Conflict(`A client named "${input.name}" already exists`);
      return { client, secret };
    },

    /** Redirect URIs and grants; `rotateSecret` gives a confidential client a new secret, shown once. */
    async update(actor: Actor, name: string, input: ClientUpdate): Promise<ClientWithSecret> {
      requirePermission(actor, CLIENT_MANAGERS);
      const target = await existing(name);
      if (input.rotateSecret && target.type === 'public')
        throw new ValidationFailed({ rotateSecret: ['A public client has no secret'] });
      const grants = input.grants ?? target.grants;
      const redirectUris = input.redirectUris ?? target.redirectUris;
      assertConsistent(target.type, grants, redirectUris);
      const changes: ClientChanges = { updatedAt: now() };
      if (input.grants !== undefined) changes.grants = [...input.grants];
      if (input.redirectUris !== undefined) changes.redirectUris = [...input.redirectUris];
      const secret = input.rotateSecret ? newClientSecret() : undefined;
      if (secret !== undefined) changes.secretDigest = digestClientSecret(secret);
      const write = async () => {
        const updated = await clients.update(name, changes);
        if (!updated) throw new NotFound('No such client');
        return { client: updated, secret };
      };
      // Only new grants can take away the last sign-in of administrators.
      return input.grants === undefined ? write() : keepingAdminSignIn(name, input.grants, write);
    },

    /**
     * Its refresh tokens and codes die with it: the token endpoint authenticates the client
     * before it reads a token, and a client registered again under the name has another id,
     * which the tokens and codes of the old one do not carry.
     */
    async remove(actor: Actor, name: string): Promise<void> {
      requirePermission(actor, CLIENT_MANAGERS);
      await keepingAdminSignIn(name, null, async () => {
        if (!(await clients.delete(name))) throw new NotFound('No such client');
      });
    },
  };
}

/** 256 random bits: a machine secret, stored as its SHA-256 digest. */
function newClientSecret(): string {
  return randomBytes(32).toString('base64url');
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
    const problem = redirectUriProblem(uri);
    if (problem !== null) errors.set(`redirectUris.${index}`, [problem]);
  });
  if (errors.size > 0) throw new ValidationFailed(Object.fromEntries(errors));
}
