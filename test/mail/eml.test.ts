import assert from 'node:assert/strict';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { PASSWORD } from '../accounts/fixtures.ts';
import { request } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { lastMailTo, linkIn, readMailDir } from '../support/smtp.ts';

describe('mail without SMTP_URL: .eml files under <LOG_DIR>/mail', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  test('each message is a complete .eml file (text and HTML parts) with a link built from APP_URL', async () => {
    const identity = 'eml@example.com';
    const response = await request(server.url, 'POST', '/account/register', {
      json: { identity, password: PASSWORD, passwordConfirm: PASSWORD, firstName: '<b>Bob</b>' },
    });
    assert.equal(response.status, 201);
    const mails = await readMailDir(server.logDir);
    assert.equal(mails.length, 1);
    const { file, parsed } = lastMailTo(mails, identity);
    assert.match(file, /\.eml$/);
    assert.equal(
      ((await stat(file)).mode & 0o777).toString(8),
      '600',
      'only the service reads the mail it keeps',
    );
    assert.match(parsed.subject ?? '', /Activate your token-service account/);
    assert.equal(parsed.from?.value[0]?.address, 'no-reply@localhost');
    const link = linkIn(parsed, '/account/activate/');
    assert.equal(link.url, `http://localhost:8080/account/activate/${link.hash}`);
    assert.ok(String(parsed.html).includes('&lt;b&gt;Bob&lt;/b&gt;'), 'names are escaped in the HTML part');
    assert.ok(!String(parsed.html).includes('<b>Bob'), 'no markup injected');
    // The README's walk-through greps the raw file for this line: no encoding may wrap it.
    const raw = await readFile(file, 'utf8');
    assert.ok(raw.includes(`Activation code: ${link.hash}`), 'the code line is greppable in the raw file');
    const activated = await request(server.url, 'PATCH', link.path, { json: { password: PASSWORD } });
    assert.equal(activated.status, 200);
  });

  test('a mail directory that cannot be written is a 503, and the registration is undone', async () => {
    const mailDir = join(server.logDir, 'mail');
    await rm(mailDir, { recursive: true, force: true });
    await mkdir(server.logDir, { recursive: true });
    await writeFile(mailDir, 'not a directory');
    try {
      const response = await request(server.url, 'POST', '/account/register', {
        json: { identity: 'nowhere@example.com', password: PASSWORD, passwordConfirm: PASSWORD },
      });
      assert.equal(response.status, 503);
      assert.equal(await server.app.stores.users.findByIdentity('nowhere@example.com'), null);
    } finally {
      await rm(mailDir, { force: true });
    }
  });
});
