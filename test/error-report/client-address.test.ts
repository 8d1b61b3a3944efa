import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  isPublicAddress,
  normaliseAddress,
  parseAddress,
  resolveClientAddress,
} from '../../src/error-report/client-address.ts';

const socket = '192.168.0.10';

describe('resolveClientAddress: X-Forwarded-For if public, then Client-IP, then the socket', () => {
  test('a public X-Forwarded-For wins over Client-IP and the socket', () => {
    assert.deepEqual(
      resolveClientAddress({ forwardedFor: '8.8.8.8', clientIp: '10.0.0.1', remoteAddress: socket }),
      {
        address: '8.8.8.8',
        source: 'X-Forwarded-For',
      },
    );
  });

  test('only the first X-Forwarded-For entry counts', () => {
    const resolved = resolveClientAddress({
      forwardedFor: '8.8.4.4, 10.0.0.2, 1.1.1.1',
      clientIp: undefined,
      remoteAddress: socket,
    });
    assert.equal(resolved.address, '8.8.4.4');
    assert.equal(
      resolveClientAddress({ forwardedFor: '10.0.0.2, 1.1.1.1', clientIp: undefined, remoteAddress: socket })
        .source,
      'socket',
      'a private first entry is not skipped in favour of a later public one',
    );
  });

  test('a private, loopback, link-local, unique-local or reserved X-Forwarded-For falls through to Client-IP', () => {
    for (const forwardedFor of [
      '10.1.2.3',
      '127.0.0.1',
      '169.254.1.1',
      '172.16.5.4',
      '100.64.0.1',
      '::1',
      'fe80::1',
      'fd12::1',
      '192.0.2.1',
      '240.0.0.1',
    ]) {
      assert.deepEqual(
        resolveClientAddress({ forwardedFor, clientIp: '10.9.9.9', remoteAddress: socket }),
        { address: '10.9.9.9', source: 'Client-IP' },
        forwardedFor,
      );
    }
  });

  test('garbage in X-Forwarded-For is ignored', () => {
    for (const forwardedFor of [
      'not-an-ip',
      'unknown',
      '8.8.8.8:443',
      '[2606:4700::1111]',
      '',
      ' , 8.8.8.8',
      '8.8.8.8.8',
    ]) {
      assert.equal(
        resolveClientAddress({ forwardedFor, clientIp: '10.9.9.9', remoteAddress: socket }).source,
        'Client-IP',
        JSON.stringify(forwardedFor),
      );
    }
  });

  test('Client-IP may be private but must be an address; otherwise the socket address is used', () => {
    assert.deepEqual(
      resolveClientAddress({ forwardedFor: undefined, clientIp: '192.168.1.7', remoteAddress: socket }),
      {
        address: '192.168.1.7',
        source: 'Client-IP',
      },
    );
    assert.deepEqual(
      resolveClientAddress({ forwardedFor: undefined, clientIp: 'localhost', remoteAddress: socket }),
      {
        address: socket,
        source: 'socket',
      },
    );
  });

  test('IPv6 and IPv4-mapped addresses are normalised in every position', () => {
    assert.deepEqual(
      resolveClientAddress({
        forwardedFor: '2606:4700:0000::1111',
        clientIp: undefined,
        remoteAddress: socket,
      }),
      { address: '2606:4700::1111', source: 'X-Forwarded-For' },
    );
    assert.deepEqual(
      resolveClientAddress({ forwardedFor: '::ffff:8.8.8.8', clientIp: undefined, remoteAddress: socket }),
      {
        address: '8.8.8.8',
        source: 'X-Forwarded-For',
      },
    );
    assert.deepEqual(
      resolveClientAddress({
        forwardedFor: '::ffff:10.0.0.1',
        clientIp: undefined,
        remoteAddress: '::ffff:127.0.0.1',
      }),
      {
        address: '127.0.0.1',
        source: 'socket',
      },
    );
    assert.equal(
      resolveClientAddress({
        forwardedFor: ['8.8.8.8, 10.0.0.1'],
        clientIp: undefined,
        remoteAddress: socket,
      }).address,
      '8.8.8.8',
    );
  });
});

describe('addresses', () => {
  test('public unicast addresses are public; special-purpose ones are not', () => {
    for (const address of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '2606:4700::1111', '2a00:1450:4001::200e']) {
      assert.ok(isPublicAddress(address), address);
    }
    for (const address of [
      '0.0.0.0',
      '10.0.0.1',
      '100.127.255.255',
      '127.0.0.1',
      '169.254.169.254',
      '172.31.255.255',
      '192.0.0.8',
      '192.0.2.1',
      '192.168.1.1',
      '198.18.0.1',
      '198.51.100.1',
      '203.0.113.1',
      '224.0.0.1',
      '255.255.255.255',
      '::',
      '::1',
      'fe80::1',
      'fc00::1',
      'fd00::1',
      'ff02::1',
      '2001:db8::1',
      '2002:c000:204::1',
      '2001::1',
      '64:ff9b::808:808',
      'not-an-address',
    ]) {
      assert.ok(!isPublicAddress(address), address);
    }
  });

  test('normaliseAddress writes IPv6 in RFC 5952 form and IPv4-mapped addresses as IPv4', () => {
    assert.equal(normaliseAddress('2001:DB8:0:0:0:0:0:1'), '2001:db8::1');
    assert.equal(normaliseAddress('::FFFF:808:808'), '8.8.8.8');
    assert.equal(normaliseAddress('0:0:0:0:0:ffff:192.168.1.1'), '192.168.1.1');
    assert.equal(normaliseAddress('192.168.1.1'), '192.168.1.1');
    assert.equal(parseAddress(' 8.8.8.8'), undefined, 'no trimming inside parseAddress: the caller splits');
  });
});
