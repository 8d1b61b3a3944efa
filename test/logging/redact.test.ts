import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { REDACTED, scrubSecrets, scrubText } from '../../src/logging/redact.ts';

describe('scrubText', () => {
  test('blanks secret-named values in JSON, JavaScript, form, query and header syntax', () => {
    const cases: [string, string][] = [
      ['{"username":"someone","password":"hunter2"}', `{"username":"someone","password":"${REDACTED}"}`],
      ["{ password: 'hunter2', user: 'x' }", `{ password: '${REDACTED}', user: 'x' }`],
      ["{ 'client_secret' : 'abc' }", `{ 'client_secret' : '${REDACTED}' }`],
      ['grant_type=password&password=hunter2&x=1', `grant_type=password&password=${REDACTED}&x=1`],
      [
        'GET /cb?code=1&code_verifier=abcdef HTTP/1.1',
        `GET /cb?code=${REDACTED}&code_verifier=${REDACTED} HTTP/1.1`,
      ],
      ['Error-Reporting-Token: abcdef123\nnext', `Error-Reporting-Token: ${REDACTED}\nnext`],
      ['Cookie: session=abc; other=def', `Cookie: ${REDACTED}`],
      ['password: hunter2', `password: ${REDACTED}`],
      ['failed: Authorization: Basic dXNlcjpwYXNz', `failed: Authorization: ${REDACTED}`],
      ['sent Bearer eyJhbGciOi.x.y along', `sent Bearer ${REDACTED} along`],
      ['{\\"refresh_token\\":\\"abc\\",\\"n\\":1}', `{\\"refresh_token\\":${REDACTED}`],
      ['"credentials":{"password":"b","w":"s2"},"n":1', `"credentials":${REDACTED},"n":1`],
      ['{"password":["a","bsecret"],"n":1}', `{"password":${REDACTED},"n":1}`],
      ['user[password]=hunter2&x=1', `user[password]=${REDACTED}&x=1`],
      ['Authorization: Digest username="u", response="deadbeef"\nnext', `Authorization: ${REDACTED}\nnext`],
      ['pass%77ord=hunter2&x=1', `pass%77ord=${REDACTED}&x=1`],
      ['user%5Bpassword%5D=hunter2&x=1', `user%5Bpassword%5D=${REDACTED}&x=1`],
      [
        'connect to redis://:s3cret@10.0.0.1:6379 failed',
        `connect to redis://${REDACTED}@10.0.0.1:6379 failed`,
      ],
      [
        'mongodb://app:p%40ss@h1,h2/db?replicaSet=rs0 and https://u:p@x.test/',
        `mongodb://${REDACTED}@h1,h2/db?replicaSet=rs0 and https://${REDACTED}@x.test/`,
      ],
      ['mongodb://app:p@ss@h1/db', `mongodb://${REDACTED}@h1/db`],
      ['redis://:ab#cd?e@host:6379', `redis://${REDACTED}@host:6379`],
      ['clone https://ghp_abc123@github.com/x failed', `clone https://${REDACTED}@github.com/x failed`],
    ];
    for (const [text, scrubbed] of cases) assert.equal(scrubText(text), scrubbed, text);
  });

  test('blanks the hash of a mailed link in our link shapes, also percent-encoded inside another URL', () => {
    const hash = 'Xy3_-aB9kLmN0pQrStUvWxYz0123456789abcdEFGHI';
    const cases: [string, string][] = [
      [
        `PATCH https://api.example.com/account/reset-password/${hash} failed: 500`,
        `PATCH https://api.example.com/account/reset-password/${REDACTED} failed: 500`,
      ],
      [`{"url":"/account/activate/${hash}","n":1}`, `{"url":"/account/activate/${REDACTED}","n":1}`],
      [`/account/change-identity/${hash}?x=1#top`, `/account/change-identity/${REDACTED}?x=1#top`],
      [
        `https://app.example.com/#/account/reset-password/${hash}/done`,
        `https://app.example.com/#/account/reset-password/${REDACTED}/done`,
      ],
      [
        `/login?next=%2Faccount%2Freset-password%2F${hash}&x=1`,
        `/login?next=%2Faccount%2Freset-password%2F${REDACTED}&x=1`,
      ],
      [`/Account/Activate/${hash}`, `/Account/Activate/${REDACTED}`],
    ];
    for (const [text, scrubbed] of cases) assert.equal(scrubText(text), scrubbed, text);
  });

  test('blanks a standalone 43-character base64url run (a link hash, a one-time secret) wherever it is', () => {
    const hash = 'Xy3_-aB9kLmN0pQrStUvWxYz0123456789abcdEFGHI';
    assert.equal(hash.length, 43);
    const cases: [string, string][] = [
      [hash, REDACTED],
      [`the user pasted ${hash} into the form`, `the user pasted ${REDACTED} into the form`],
      [`{"value":"${hash}","n":1}`, `{"value":"${REDACTED}","n":1}`],
      [`https://app.example.com/#/reset?k=${hash}&x=1`, `https://app.example.com/#/reset?k=${REDACTED}&x=1`],
      [`/login?next=%2Fsomewhere%2F${hash}%26x`, `/login?next=%2Fsomewhere%2F${REDACTED}%26x`],
      [`${hash}.${hash}`, `${REDACTED}.${REDACTED}`],
      [`(${hash})\n${hash}`, `(${REDACTED})\n${REDACTED}`],
    ];
    for (const [text, scrubbed] of cases) assert.equal(scrubText(text), scrubbed, text);
  });

  test("blanks a bare JWS compact token (an access token) wherever it stands, whatever its parts' lengths", () => {
    const jws =
      'eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiJ1MSIsImV4cCI6MTcwMDAwMDAwMH0.c2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJl';
    const cases: [string, string][] = [
      [`fetch failed after 401; retried with ${jws}`, `fetch failed after 401; retried with ${REDACTED}`],
      [jws, REDACTED],
      [`(${jws}), then ${jws}.`, `(${REDACTED}), then ${REDACTED}.`],
      [`{"value":"${jws}"}`, `{"value":"${REDACTED}"}`],
      [`/x?next=%2Fcb%23t%3D${jws}%26y`, `/x?next=%2Fcb%23t%3D${REDACTED}%26y`],
      ['unsigned eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1MSJ9. end', `unsigned ${REDACTED} end`],
      ['eyJ.eyJ.eyJ', REDACTED],
    ];
    for (const [text, scrubbed] of cases) assert.equal(scrubText(text), scrubbed, text);
  });

  test('keeps dotted names, versions and two-part strings that are no JWS', () => {
    for (const text of [
      'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1MSJ9',
      'eyJ is how {" starts in base64',
      'node.js.v24 and a.b.c',
      'xeyJhbGci.eyJzdWIi.sig',
      'eyJhbGci..sig',
    ]) {
      assert.equal(scrubText(text), text);
    }
  });

  test('blanks the hash of a mailed link encoded more than once, and 43-character runs after double-encoded escapes', () => {
    const hash = 'QQQQQQQQQQQQQQQQQQQQrrrrrrrrrrrrrrrrrrrrrrr';
    const cases: [string, string][] = [
      [
        `https://sso.example/login?next=%252Faccount%252Freset-password%252F${hash}`,
        `https://sso.example/login?next=%252Faccount%252Freset-password%252F${REDACTED}`,
      ],
      [
        `/a?next=%25252Faccount%25252Factivate%25252F${hash}%252526x`,
        `/a?next=%25252Faccount%25252Factivate%25252F${REDACTED}%252526x`,
      ],
      [`/login?next=%252Fsomewhere%252F${hash}%2526x`, `/login?next=%252Fsomewhere%252F${REDACTED}%2526x`],
      [`/login?next=%2525${hash}`, `/login?next=%2525${REDACTED}`],
      [`a literal %25${'ab'}${hash.slice(2)} in a query`, `a literal %25${REDACTED} in a query`],
      ['/x?next=%252Fcb%253Fpassword%253Dhunter2', `/x?next=%252Fcb%253Fpassword%253D${REDACTED}`],
      ['/x?next=%252Fcb%253Fcode%253Dabc', `/x?next=%252Fcb%253Fcode%253D${REDACTED}`],
    ];
    for (const [text, scrubbed] of cases) assert.equal(scrubText(text), scrubbed, text);
  });

  test('keeps base64url runs of other lengths, ids and digests', () => {
    const hash = 'Xy3_-aB9kLmN0pQrStUvWxYz0123456789abcdEFGHI';
    for (const text of [
      hash.slice(1),
      `${hash}A`,
      `x${hash}`,
      'c1b5b7a2-5a3c-4a8f-9d34-7c1e0f6b2a11',
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
      `a ${'A'.repeat(86)} b`,
    ]) {
      assert.equal(scrubText(text), text);
    }
  });

  test('blanks the values of hash, resetCode, activationCode and confirmationCode keys, not of other hashes or codes', () => {
    const cases: [string, string][] = [
      ['{"hash":"abc","n":1}', `{"hash":"${REDACTED}","n":1}`],
      ['/x?hash=abc&y=1', `/x?hash=${REDACTED}&y=1`],
      ["{ resetCode: '123456' }", `{ resetCode: '${REDACTED}' }`],
      ['activation_code=abc&x=1', `activation_code=${REDACTED}&x=1`],
      ['"confirmationCode": "c0nf"', `"confirmationCode": "${REDACTED}"`],
      [
        '{"code":"ECONNREFUSED","hashAlgorithm":"sha256","commitHash":"abc"}',
        '{"code":"ECONNREFUSED","hashAlgorithm":"sha256","commitHash":"abc"}',
      ],
    ];
    for (const [text, scrubbed] of cases) assert.equal(scrubText(text), scrubbed, text);
  });

  test('blanks the code and state of an OAuth redirect wherever they are URL parameters', () => {
    const cases: [string, string][] = [
      [
        'https://app.example.com/cb?code=SplxlOBeZQQYbYS6WxSbIA&state=xyz&iss=https%3A%2F%2Fid.example',
        `https://app.example.com/cb?code=${REDACTED}&state=${REDACTED}&iss=https%3A%2F%2Fid.example`,
      ],
      [
        'https://app.example.com/cb#access_token=at-1&state=xyz&expires_in=3600',
        `https://app.example.com/cb#access_token=${REDACTED}&state=${REDACTED}&expires_in=3600`,
      ],
      ['code=abc&state=def', `code=${REDACTED}&state=${REDACTED}`],
      ['/cb;code=abc', `/cb;code=${REDACTED}`],
      ['/cb?CODE=abc', `/cb?CODE=${REDACTED}`],
      ['/login?returnTo=%2Fcb%3Fcode%3Dabc%26state%3Ddef', `/login?returnTo=%2Fcb%3Fcode%3D${REDACTED}`],
      ['"https://app.example.com/cb?state=xyz"', `"https://app.example.com/cb?state=${REDACTED}"`],
      ['grant_type=authorization_code&code=abc', `grant_type=authorization_code&code=${REDACTED}`],
      ['a=1&client_assertion=eyJhbGciOi.x.y', `a=1&client_assertion=${REDACTED}`],
      ['/x?password%3Dhunter2', `/x?password%3D${REDACTED}`],
    ];
    for (const [text, scrubbed] of cases) assert.equal(scrubText(text), scrubbed, text);
  });

  test('keeps error codes, states and link paths that are no URL parameter or carry no hash', () => {
    for (const text of [
      '{"code":"ECONNREFUSED","state":"closed"}',
      "{ code: 'ERR_ASSERTION', state: 'open' }",
      'exit code=1, state=running',
      '/x?readyState=4&statecode=2&encode=1',
      'PATCH /account/reset-password/:hash',
      'see /account/activate and /account/reset-password/',
    ]) {
      assert.equal(scrubText(text), text);
    }
  });

  test('leaves text without secret-named keys as it is', () => {
    for (const text of [
      'ratio 3:4 and a=b',
      'socket hang up',
      '"username":"someone"',
      'at f (file.ts:10:5)',
      'see https://example.com:8443/path?a=b@c and mailto:someone@example.com',
      'http://x.test?a=b@c',
      '100%25 of a=%zz',
    ]) {
      assert.equal(scrubText(text), text);
    }
  });
});

describe('scrubSecrets', () => {
  test('keeps members named __proto__, constructor and prototype as data', () => {
    const context = JSON.parse('{"__proto__":{"password":"p","a":1},"constructor":"c","prototype":2}');
    const scrubbed = scrubSecrets(context) as Record<string, unknown>;
    assert.equal(
      JSON.stringify(scrubbed),
      `{"__proto__":{"password":"${REDACTED}","a":1},"constructor":"c","prototype":2}`,
    );
    assert.ok(Object.hasOwn(scrubbed, '__proto__'), 'the member is data, not the prototype');
  });

  test('blanks members named hash, resetCode, activationCode, confirmationCode, jwt, auth and tokens, and 43-character runs in names and values', () => {
    const hash = 'Xy3_-aB9kLmN0pQrStUvWxYz0123456789abcdEFGHI';
    const scrubbed = JSON.parse(
      JSON.stringify(
        scrubSecrets({
          hash: 'short',
          Hash: 'other',
          resetCode: '123456',
          activation_code: 'abc',
          nested: { confirmationCode: 'c0nf', code: 'ECONNREFUSED', hashAlgorithm: 'sha256' },
          list: [`took ${hash}`],
          links: { [hash]: true },
          jwt: 'j',
          auth: 'user:pass',
          proxyAuth: 'u:p',
          id_token: 'i',
          access_token: 'a',
          refresh_token: 'r',
          assertion: 's',
          idJwt: 'x',
          author: 'kept',
          authSource: 'admin',
        }),
      ),
    );
    assert.deepEqual(scrubbed, {
      hash: REDACTED,
      Hash: REDACTED,
      resetCode: REDACTED,
      activation_code: REDACTED,
      nested: { confirmationCode: REDACTED, code: 'ECONNREFUSED', hashAlgorithm: 'sha256' },
      list: [`took ${REDACTED}`],
      links: { [REDACTED]: true },
      jwt: REDACTED,
      auth: REDACTED,
      proxyAuth: REDACTED,
      id_token: REDACTED,
      access_token: REDACTED,
      refresh_token: REDACTED,
      assertion: REDACTED,
      idJwt: REDACTED,
      author: 'kept',
      authSource: 'admin',
    });
  });
});
