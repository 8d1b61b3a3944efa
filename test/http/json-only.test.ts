import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PASSWORD } from '../accounts/fixtures.ts';
import { FRONTEND_CLIENT, request, SEEDED_USER } from '../support/http.ts';
import { backends, describeBackendSkip, startTestServer, type TestServer } from '../support/server.ts';
import { readMailDir } from '../support/smtp.ts';

describeBackendSkip();

/**
 * The media types a browser may post from any page without a CORS preflight (Fetch's
 * CORS-safelisted request headers): a JSON route that took one of them could be driven from
 * any web page, its visitors' browsers registering accounts and asking for mails.
 */
const SIMPLE_BODIES: readonly (readonly [string, string])[] = [
  ['application/x-www-form-urlencoded', 'form'],
  ['multipart/form-data; boundary=x', 'multipart'],
  ['text/plain', 'text'],
];

/** The paths whose form POST is a page's rather than the API's. */
const PAGE_PATHS = new Set(['/account/register', '/account/reset-password']);

for (const backend of backends()) {
  describe(`JSON routes take JSON only (${backend})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ backend });
    });
    after(() => server.close());

    const formOf = (fields: Record<string, string>, mediaType: string): string =>
      mediaType.startsWith('multipart/')
        ? `${Object.entries(fields)
            .map(
              ([name, value]) => `--x\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`,
            )
            .join('')}--x--\r\n`
        : new URLSearchParams(fields).toString();

    test('a body other than JSON posted to a JSON route is 415 problem+json (a page form without its seal: 400), and registers nothing, mails nothing', async () => {
      const identity = 'drive-by@example.com';
      const posts: readonly (readonly [string, Record<string, string>])[] = [
        ['/account/register', { identity, password: PASSWORD, passwordConfirm: PASSWORD }],
        ['/account/reset-password', { email: SEEDED_USER.username }],
        ['/account/recover-identity', { email: SEEDED_USER.username }],
        ['/account/activate', { email: SEEDED_USER.username }],
      ];
      for (const [mediaType, label] of SIMPLE_BODIES) {
        for (const [path, fields] of posts) {
          const response = await request(server.url, 'POST', path, {
            raw: formOf(fields, mediaType),
            headers: { 'Content-Type': mediaType },
          });
          // A form to a path that has a page (docs/api.md, "Pages for people") is that page's form,
          // which a post from another site cannot use: it carries no sealed form value of ours.
          const page = label === 'form' && PAGE_PATHS.has(path);
          assert.equal(response.status, page ? 400 : 415, `${label} to ${path}`);
          assert.match(
            response.headers.get('content-type') ?? '',
            page ? /^text\/html/ : /^application\/problem\+json$/,
          );
        }
      }
      assert.equal(await server.app.stores.users.findByIdentity(identity), null, 'no account');
      assert.deepEqual(await readMailDir(server.logDir), [], 'no mail');
    });

    test('a route that lists its media types still takes them: the token endpoint takes a form', async () => {
      const response = await request(server.url, 'POST', '/security/generate-token', {
        form: { grant_type: 'password', scope: 'api', ...FRONTEND_CLIENT, ...SEEDED_USER },
      });
      assert.equal(response.status, 200);
    });

    test('the same JSON is taken as application/json and as an application/*+json type', async () => {
      for (const mediaType of ['application/json', 'application/merge-patch+json']) {
        const response = await request(server.url, 'POST', '/account/reset-password', {
          raw: JSON.stringify({ email: 'nobody@example.com' }),
          headers: { 'Content-Type': mediaType },
        });
        assert.equal(response.status, 200, mediaType);
      }
    });
  });
}
