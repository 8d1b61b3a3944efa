import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { newAccountRecord } from '../../src/accounts/account-record.ts';
import { createPasswordHasher } from '../../src/accounts/password-hasher.ts';
import { SEED } from '../../src/seed.ts';
import {
  type Backend,
  freePort,
  onPath,
  startFerretDb,
  uniqueName,
  withDatabase,
} from '../support/backends.ts';
import { openTestStores } from '../support/stores.ts';
import { isOneLineFailure, runCli } from './run-cli.ts';

describe('cli seed', () => {
  let cwd: string;
  before(async () => {
    cwd = await mkdtemp(join(tmpdir(), 'cli-seed-'));
  });
  after(() => rm(cwd, { recursive: true, force: true }));

  test('--help', async () => {
    const result = await runCli(['seed', '--help'], { cwd });
    assert.equal(result.code, 0);
    assert.match(result.stdout, /Usage: token-service seed \[options\]/);
    assert.match(result.stdout, /--timeout <seconds>/);
    assert.match(result.stdout, /--restore \[records\.\.\.\]/);
  });

  test('without MONGODB_URL there is nothing to seed: one line, exit 1', async () => {
    const result = await runCli(['seed'], { cwd });
    assert.ok(isOneLineFailure(result), JSON.stringify(result));
    assert.match(result.stderr, /MONGODB_URL is not set/);
  });

  test('an unreachable MongoDB fails with one line naming the host, without the password', async () => {
    const port = await freePort();
    const result = await runCli(['seed', '--timeout', '1'], {
      cwd,
      env: { MONGODB_URL: `mongodb://seed:s3cret-pw@127.0.0.1:${port}/seed` },
    });
    assert.ok(isOneLineFailure(result), JSON.stringify(result));
    assert.match(result.stderr, new RegExp(`127\\.0\\.0\\.1:${port}`));
    assert.doesNotMatch(result.stderr, /s3cret-pw/);
  });

  test('a bad --timeout fails with one line', async () => {
    const result = await runCli(['seed', '--timeout', 'soon'], { cwd });
    assert.ok(isOneLineFailure(result), JSON.stringify(result));
  });

  describe('against MongoDB', () => {
    let mongo: Backend | undefined;
    let url: string | undefined;
    before(async () => {
      if (process.env.MONGODB_URL) url = withDatabase(process.env.MONGODB_URL, uniqueName('seed'));
      else if (onPath('ferretdb')) {
        mongo = await startFerretDb();
        url = mongo.url;
      }
    });
    after(() => mongo?.dispose());

    test('creates what is missing, then finds everything there, and exits', async (t) => {
      if (!url) return t.skip('neither MONGODB_URL nor a ferretdb binary is available');
      const first = await runCli(['seed'], { cwd, env: { MONGODB_URL: url, BCRYPT_COST: '4' } });
      assert.equal(first.code, 0, first.stderr);
      assert.match(
        first.stdout,
        /^Created scope api, client admin, client frontend, admin admin, user user@example\.com\n/,
      );
      assert.match(first.stdout, /publicly known/);

      const second = await runCli(['seed'], { cwd, env: { MONGODB_URL: url, BCRYPT_COST: '4' } });
      assert.equal(second.code, 0, second.stderr);
      assert.equal(second.stdout, 'Every seed record is already there\n');

      const stores = await openTestStores({ mongodbUrl: url });
      const passwords = createPasswordHasher({ cost: 4, threads: 1 });
      try {
        const admin = await stores.admins.findByIdentity(SEED.admin.identity);
        assert.ok(admin && (await passwords.verify(SEED.admin.password, admin.passwordHash)));
        assert.ok(await stores.clients.findByName('frontend'));
      } finally {
        await Promise.allSettled([stores.close(), passwords.close()]);
      }
    });

    test('a seed record an operator removed is not seeded again; --restore brings back the one named', async (t) => {
      if (!url) return t.skip('neither MONGODB_URL nor a ferretdb binary is available');
      const env = { MONGODB_URL: url, BCRYPT_COST: '4' };
      assert.equal((await runCli(['seed'], { cwd, env })).code, 0);
      const stores = await openTestStores({ mongodbUrl: url });
      try {
        assert.equal(await stores.clients.delete('admin'), true);
        assert.equal(await stores.clients.delete('frontend'), true);

        const again = await runCli(['seed'], { cwd, env });
        assert.equal(again.code, 0, again.stderr);
        assert.match(again.stdout, /^Nothing to create\n.*: client:admin, client:frontend \(seed --restore/);
        assert.equal(await stores.clients.findByName('admin'), null);

        const restored = await runCli(['seed', '--restore', 'client:frontend'], { cwd, env });
        assert.equal(restored.code, 0, restored.stderr);
        assert.match(restored.stdout, /^Restored client frontend\n.*: client:admin \(/);
        assert.match(restored.stdout, /publicly known/);
        assert.equal((await stores.clients.findByName('frontend'))?.accountKind, 'user');
        assert.equal(await stores.clients.findByName('admin'), null);

        const unknown = await runCli(['seed', '--restore', 'client:nobody'], { cwd, env });
        assert.ok(isOneLineFailure(unknown), JSON.stringify(unknown));
        assert.match(unknown.stderr, /no seed record client:nobody/);

        const all = await runCli(['seed', '--restore'], { cwd, env });
        assert.equal(all.code, 0, all.stderr);
        assert.equal(all.stdout.split('\n')[0], 'Restored client admin');
        assert.ok(await stores.clients.findByName('admin'));
      } finally {
        await stores.close();
      }
    });

    test('an administrator created before the first seed: the seed admin is named as never seeded, not as removed', async (t) => {
      if (!url) return t.skip('neither MONGODB_URL nor a ferretdb binary is available');
      const own = withDatabase(url, uniqueName('seed-own-admin'));
      const env = { MONGODB_URL: own, BCRYPT_COST: '4' };
      const stores = await openTestStores({ mongodbUrl: own });
      try {
        await stores.admins.create(
          newAccountRecord(
            { identity: 'ops', passwordHash: 'x', status: 'active', roles: ['superuser'] },
            new Date(),
          ),
        );
        const first = await runCli(['seed'], { cwd, env });
        assert.equal(first.code, 0, first.stderr);
        assert.match(
          first.stdout,
          /^Created scope api, client admin, client frontend, user user@example\.com\n/,
        );
        for (const run of [first, await runCli(['seed'], { cwd, env })]) {
          assert.doesNotMatch(run.stdout, /removed/);
          assert.match(
            run.stdout,
            /\nNever seeded, as their store already held accounts of its own.*: admin:admin \(/,
          );
        }
        assert.equal(await stores.admins.findByIdentity(SEED.admin.identity), null);
      } finally {
        await stores.close();
      }
    });
  });
});
