import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createErrorReportReceiver } from '../../src/error-report/error-report.ts';
import { createReportingTokens } from '../../src/error-report/tokens.ts';
import {
  createClientWhitelist,
  InvalidWhitelistEntry,
  originHost,
} from '../../src/error-report/whitelist.ts';

describe('IP whitelist', () => {
  const whitelist = createClientWhitelist({
    addresses: [
      '203.0.113.7',
      '10.0.0.0/8',
      '2001:db8:abcd::/48',
      '2606:4700::1111',
      '::ffff:198.51.100.0/120',
    ],
    domains: [],
  });

  test('matches exact IPv4 and IPv6 addresses', () => {
    assert.ok(whitelist.admitsAddress('203.0.113.7'));
    assert.ok(!whitelist.admitsAddress('203.0.113.8'));
    assert.ok(whitelist.admitsAddress('2606:4700:0::1111'));
    assert.ok(!whitelist.admitsAddress('2606:4700::1112'));
  });

  test('matches CIDR ranges of both families', () => {
    assert.ok(whitelist.admitsAddress('10.255.0.1'));
    assert.ok(!whitelist.admitsAddress('11.0.0.1'));
    assert.ok(whitelist.admitsAddress('2001:db8:abcd:12::1'));
    assert.ok(!whitelist.admitsAddress('2001:db8:abce::1'));
  });

  test('treats IPv4-mapped IPv6 as IPv4, on either side', () => {
    assert.ok(whitelist.admitsAddress('::ffff:10.1.2.3'));
    assert.ok(whitelist.admitsAddress('198.51.100.200'), 'a mapped range covers the IPv4 addresses');
    assert.ok(!whitelist.admitsAddress('198.51.101.1'));
  });

  test('admits nothing that is not an address, and nobody when empty', () => {
    assert.ok(!whitelist.admitsAddress('localhost'));
    const empty = createClientWhitelist({ addresses: [], domains: [] });
    assert.ok(!empty.admitsAddress('127.0.0.1'));
    assert.ok(!empty.admitsOrigin('https://example.com'));
  });

  test('refuses malformed entries at start, before the service serves', () => {
    assert.throws(
      () =>
        createErrorReportReceiver({
          tokens: new Map([['web', 'web-token-0123456789abcdef']]),
          ipWhitelist: ['10.0.0.0/8', '10.0.0.0/40'],
          domainWhitelist: [],
          logDir: 'unused',
        }),
      /Invalid IP whitelist entry "10\.0\.0\.0\/40"/,
    );
    for (const entry of ['10.0.0.0/33', 'example.com', '10.0.0.0/8/1', '2001:db8::/129', '10.0.0.0/x', '']) {
      assert.throws(
        () => createClientWhitelist({ addresses: [entry], domains: [] }),
        InvalidWhitelistEntry,
        entry,
      );
    }
  });
});

describe('domain whitelist', () => {
  const whitelist = createClientWhitelist({
    addresses: [],
    domains: ['app.example.com', 'Admin.Example.com.'],
  });

  test('matches the host of the Origin header exactly, whatever the scheme port or case', () => {
    assert.ok(whitelist.admitsOrigin('https://app.example.com'));
    assert.ok(whitelist.admitsOrigin('http://APP.example.com:8443'));
    assert.ok(whitelist.admitsOrigin('https://admin.example.com'));
  });

  test('refuses other hosts, look-alikes and non-origins', () => {
    for (const origin of [
      'https://example.com',
      'https://app.example.com.evil.test',
      'https://evilapp.example.com',
      'null',
      'app.example.com',
      undefined,
      'file:///app.example.com',
    ]) {
      assert.ok(!whitelist.admitsOrigin(origin), String(origin));
    }
    assert.equal(originHost('https://app.example.com/path'), 'app.example.com');
  });
});

describe('reporting tokens', () => {
  const tokens = createReportingTokens(
    new Map([
      ['web', 'web-token-0123456789abcdef'],
      ['mobile', 'mobile-token-0123456789abcdef'],
    ]),
  );

  test('gives the alias of the matching token, any of them', () => {
    assert.equal(tokens.aliasOf('web-token-0123456789abcdef'), 'web');
    assert.equal(tokens.aliasOf('mobile-token-0123456789abcdef'), 'mobile');
  });

  test('matches nothing else: prefixes, extensions, case changes, the alias', () => {
    for (const presented of [
      'web-token-0123456789abcde',
      'web-token-0123456789abcdef0',
      'WEB-TOKEN-0123456789ABCDEF',
      'web',
      '',
    ]) {
      assert.equal(tokens.aliasOf(presented), undefined, presented);
    }
  });

  test('knows whether any token is configured', () => {
    assert.ok(tokens.configured);
    assert.ok(!createReportingTokens(new Map()).configured);
  });
});
