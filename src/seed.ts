import { newAccountRecord } from './accounts/account-record.ts';
import type { Account, AccountStore } from './accounts/model.ts';
import type { PasswordHasher } from './accounts/password-hasher.ts';
import { newClientRecord } from './oauth/client-record.ts';
import { acceptsSecret, digestClientSecret, previousSecretExpiry } from './oauth/client-secrets.ts';
import { LEGACY_CLIENT_GRANTS } from './oauth/model.ts';
import { API_SCOPE } from './oauth/scope.ts';
import type { Stores } from './stores/stores.ts';

/**
 * The seed data. Publicly known: every value must be replaced before production (see
 * docs/operations.md, "Replace the seeded secrets"), and a production start warns about each
 * one still in place.
 */
export const SEED = {
  scope: API_SCOPE,
  clients: [
    { name: 'admin', secret: 'admin-client-secret', accountKind: 'admin' as const },
    { name: 'frontend', secret: 'frontend-client-secret', accountKind: 'user' as const },
  ],
  admin: { identity: 'admin', password: 'admin-password-change-me', roles: ['superuser' as const] },
  user: { identity: 'user@example.com', password: 'user-password-change-me' },
};

/**
 * What creating a seed record came to: `created`; `exists`, its name taken (by an earlier
 * seed, another process seeding at once, or the operator); `not-seeded`, an account left out
 * because its store already held accounts of the operator's.
 */
type SeedOutcome = 'created' | 'exists' | 'not-seeded';

/** One seed record: its mark in the seed ledger (`client:admin`), and how to find and create it. */
interface SeedRecord {
  key: string;
  /** Whether it is there under its seeded name. */
  present(stores: Stores): Promise<boolean>;
  /**
   * Creates it unless its name is taken. An account is seeded only into an empty store,
   * unless `restoring`.
   */
  create(stores: Stores, passwords: PasswordHasher, restoring: boolean): Promise<SeedOutcome>;
}

const outcome = (created: boolean): SeedOutcome => (created ? 'created' : 'exists');

/**
 * The ledger's note that a seed account was never created, its store holding the operator's
 * own accounts at the first seed: it is not created later either, and since it never existed
 * it is not reported as removed. A record created later (`seed --restore`) is marked under its
 * own key too, and from then on counts as seeded.
 */
const notSeededKey = (key: string): string => `not-seeded:${key}`;

/** The scope: created first, and the one record nothing removes. */
const SCOPE: SeedRecord = {
  key: `scope:${SEED.scope.name}`,
  present: async (stores) => (await stores.scopes.findByName(SEED.scope.name)) !== null,
  create: async (stores) => outcome(await stores.scopes.createIfAbsent(SEED.scope)),
};

const CLIENTS_AND_ACCOUNTS: readonly SeedRecord[] = [
  ...SEED.clients.map(
    ({ name, secret, accountKind }): SeedRecord => ({
      key: `client:${name}`,
      present: async (stores) => (await stores.clients.findByName(name)) !== null,
      create: async (stores) =>
        outcome(
          await stores.clients.createIfAbsent(
            newClientRecord(
              {
                name,
                type: 'confidential',
                secretDigest: digestClientSecret(secret),
                accountKind,
                redirectUris: [],
                grants: LEGACY_CLIENT_GRANTS,
              },
              new Date(),
            ),
          ),
        ),
    }),
  ),
  seedAccount('admin', (stores) => stores.admins, SEED.admin),
  seedAccount('user', (stores) => stores.users, { ...SEED.user, roles: [] }),
];

/** In the order they are seeded. */
export const SEED_RECORDS: readonly SeedRecord[] = [SCOPE, ...CLIENTS_AND_ACCOUNTS];

function seedAccount(
  kind: string,
  storeOf: (stores: Stores) => AccountStore,
  { identity, password, roles }: { identity: string; password: string; roles: Account['roles'] },
): SeedRecord {
  return {
    key: `${kind}:${identity}`,
    present: async (stores) => (await storeOf(stores).findByIdentity(identity)) !== null,
    async create(stores, passwords, restoring) {
      const store = storeOf(stores);
      // Into an empty store only, as ever: an operator who created their own administrators
      // before the first start has no use for the seeded one. The store may hold it already,
      // created by another process seeding at once: then it is there, like any taken name.
      if (!restoring && (await store.count({})) > 0)
        return (await store.findByIdentity(identity)) ? 'exists' : 'not-seeded';
      return outcome(
        await store.createIfAbsent(
          newAccountRecord(
            { identity, passwordHash: await passwords.hash(password), status: 'active', roles },
            new Date(),
          ),
        ),
      );
    },
  };
}

/** How a seed record is named in messages: `client admin`. */
export const seedLabel = (key: string): string => key.replace(':', ' ');

/**
 * Creates each seed record the first time, and never again: a record is marked in the seed
 * ledger once it exists, and a marked one is not created again, so one an operator removed
 * stays removed. A seed account left out because the operator had accounts of their own is
 * noted instead (notSeededKey), and not created later either. Of several processes seeding at once each creates what is not marked yet
 * (createIfAbsent: exactly one of them does), so none of them goes on to serve before the seed
 * records are there, and one that dies between a record and its mark leaves the mark to the
 * next. Never touches a record that exists. Returns the labels of the records it created.
 *
 * A store that earlier versions seeded has no ledger. It holds the scope (they seeded it
 * first, and nothing removes a scope), unmarked: then every seed record counts as seeded, and
 * one missing was removed by an operator. Such a store's records are marked without being
 * created, the scope last, so that a process that finds the scope marked knows the others are.
 */
export async function seed(stores: Stores, passwords: PasswordHasher): Promise<string[]> {
  const { seedLedger } = stores;
  // In this order: the scope is marked before it is created, so a scope without a mark is old.
  if ((await SCOPE.present(stores)) && !(await seedLedger.has(SCOPE.key))) {
    for (const record of [...CLIENTS_AND_ACCOUNTS, SCOPE]) await seedLedger.claim(record.key);
    return [];
  }
  const created: string[] = [];
  await seedLedger.claim(SCOPE.key);
  // Whoever marked it: no request succeeds without the scope, and nothing removes it.
  if ((await SCOPE.create(stores, passwords, false)) === 'created') created.push(seedLabel(SCOPE.key));
  for (const record of CLIENTS_AND_ACCOUNTS) {
    if ((await seedLedger.has(record.key)) || (await seedLedger.has(notSeededKey(record.key)))) continue;
    const result = await record.create(stores, passwords, false);
    if (result === 'created') created.push(seedLabel(record.key));
    await seedLedger.claim(result === 'not-seeded' ? notSeededKey(record.key) : record.key);
  }
  return created;
}

/**
 * Creates again the seed records named by key (all of them without keys) that are missing,
 * with their publicly known secrets, for a deployment that wants them back; never changes one
 * that exists. Returns the labels of those it created.
 */
export async function restoreSeedRecords(
  stores: Stores,
  passwords: PasswordHasher,
  keys: readonly string[] = SEED_RECORDS.map((record) => record.key),
): Promise<string[]> {
  const unknown = keys.filter((key) => !SEED_RECORDS.some((record) => record.key === key));
  if (unknown.length > 0) {
    throw new Error(
      `no seed record ${unknown.join(', ')}; they are ${SEED_RECORDS.map((record) => record.key).join(', ')}`,
    );
  }
  const restored: string[] = [];
  for (const record of SEED_RECORDS) {
    if (!keys.includes(record.key)) continue;
    if ((await record.create(stores, passwords, true)) === 'created') restored.push(seedLabel(record.key));
    await stores.seedLedger.claim(record.key);
  }
  return restored;
}

/**
 * The seed records that were seeded and are missing now: removed (or renamed) by an operator.
 * (In a store that earlier versions seeded, every record counts as seeded: see `seed`.)
 */
export async function removedSeedRecords(stores: Stores): Promise<string[]> {
  const removed: string[] = [];
  for (const record of SEED_RECORDS) {
    if ((await stores.seedLedger.has(record.key)) && !(await record.present(stores)))
      removed.push(record.key);
  }
  return removed;
}

/**
 * The seed accounts never created, because their store held the operator's own accounts at
 * the first seed (an administrator created before the first start), and still missing.
 */
export async function unseededSeedRecords(stores: Stores): Promise<string[]> {
  const unseeded: string[] = [];
  for (const record of SEED_RECORDS) {
    if (
      (await stores.seedLedger.has(notSeededKey(record.key))) &&
      !(await stores.seedLedger.has(record.key)) &&
      !(await record.present(stores))
    )
      unseeded.push(record.key);
  }
  return unseeded;
}

/**
 * The publicly known defaults still in place, for the production start warning: a seeded
 * client's secret counts while it is accepted at all, as its current secret or as the one
 * before a rotation whose overlap has not ended.
 */
export async function defaultsStillInPlace(stores: Stores, passwords: PasswordHasher): Promise<string[]> {
  const found: string[] = [];
  const now = new Date();
  for (const { name, secret } of SEED.clients) {
    const client = await stores.clients.findByName(name);
    if (!client || !acceptsSecret(client, secret, now)) continue;
    // Accepted, but not as the current secret: as the previous one, until the overlap ends.
    const until =
      client.secretDigest === digestClientSecret(secret) ? null : previousSecretExpiry(client, now);
    found.push(
      until
        ? `client "${name}" still accepts its default secret, as the one before a rotation, until ${until.toISOString()}`
        : `client "${name}" has its default secret`,
    );
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
