import { randomUUID } from 'node:crypto';
import { newAccountRecord } from './accounts/account-record.ts';
import type { Account, AccountStore } from './accounts/model.ts';
import type { PasswordHasher } from './accounts/password-hasher.ts';
import { digestClientSecret } from './oauth/client-authentication.ts';
import { LEGACY_CLIENT_GRANTS } from './oauth/model.ts';
import type { Stores } from './stores/stores.ts';

/**
 * The seed data. Publicly known: every value must be replaced before production (see
 * docs/operations.md, "Replace the seeded secrets"), and a production start warns about each
 * one still in place.
 */
export const SEED = {
  scope: { name: 'api', description: 'The API' },
  clients: [
    { name: 'admin', secret: 'admin-client-secret', accountKind: 'admin' as const },
    { name: 'frontend', secret: 'frontend-client-secret', accountKind: 'user' as const },
  ],
  admin: { identity: 'admin', password: 'admin-password-change-me', roles: ['superuser' as const] },
  user: { identity: 'user@example.com', password: 'user-password-change-me' },
};

/**
 * Creates the seed scope and clients when missing, and the seed accounts when their store is
 * empty. Idempotent, safe when several processes seed at once (the stores' createIfAbsent is
 * atomic), and never touches a record that exists.
 */
export async function seed(stores: Stores, passwords: PasswordHasher): Promise<string[]> {
  const created: string[] = [];
  if (await stores.scopes.createIfAbsent(SEED.scope)) created.push(`scope ${SEED.scope.name}`);
  for (const { name, secret, accountKind } of SEED.clients) {
    const now = new Date();
    const client = {
      id: randomUUID(),
      name,
      type: 'confidential' as const,
      secretDigest: digestClientSecret(secret),
      accountKind,
      redirectUris: [],
      grants: [...LEGACY_CLIENT_GRANTS],
      createdAt: now,
      updatedAt: now,
    };
    if (await stores.clients.createIfAbsent(client)) created.push(`client ${name}`);
  }
  if (await seedAccount(stores.admins, passwords, { ...SEED.admin }))
    created.push(`admin ${SEED.admin.identity}`);
  if (await seedAccount(stores.users, passwords, { ...SEED.user, roles: [] }))
    created.push(`user ${SEED.user.identity}`);
  return created;
}

async function seedAccount(
  store: AccountStore,
  passwords: PasswordHasher,
  seedAccount: { identity: string; password: string; roles: Account['roles'] },
): Promise<boolean> {
  // Only into an empty store: once an operator has deleted or renamed the seeded account,
  // it must not come back with its publicly known password at the next start. (Deleted
  // accounts stay as anonymised records, so a store that ever held accounts is never empty.)
  if ((await store.count({})) > 0) return false;
  const { identity, password, roles } = seedAccount;
  return store.createIfAbsent(
    newAccountRecord(
      { identity, passwordHash: await passwords.hash(password), status: 'active', roles },
      new Date(),
    ),
  );
}

/** The publicly known defaults still in place, for the production start warning. */
export async function defaultsStillInPlace(stores: Stores, passwords: PasswordHasher): Promise<string[]> {
  const found: string[] = [];
  for (const { name, secret } of SEED.clients) {
    const client = await stores.clients.findByName(name);
    if (client?.secretDigest === digestClientSecret(secret))
      found.push(`client "${name}" has its default secret`);
  }
  for (const [store, { identity, password }] of [
    [stores.admins, SEED.admin],
    [stores.users, SEED.user],
  ] as const) {
    const account = await store.findByIdentity(identity);
    if (account && (await passwords.verify(password, account.passwordHash))) {
      found.push(`account "${identity}" has its default password`);
    }
  }
  return found;
}
