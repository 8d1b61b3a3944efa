/**
 * What a log line may say about a connection URL: where it points, never its password.
 * The stores' connection logs and the mailer's failure log both say it this way.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hostOf, messageWithoutPassword } from '../../src/logging/redact-url.ts';

test('hostOf names the hosts and ports without credentials, path or options', () => {
  assert.equal(
    hostOf('mongodb://app:s3cret@db1:27017,db2:27017/tokens?replicaSet=rs0'),
    'db1:27017,db2:27017',
  );
  assert.equal(hostOf('redis://:s3cret@cache.internal:6380/2'), 'cache.internal:6380');
  assert.equal(hostOf('smtps://mailer:p%40ss@smtp.example.test:465'), 'smtp.example.test:465');
  assert.equal(hostOf('mongodb+srv://cluster0.example.net/db'), 'cluster0.example.net');
  assert.equal(hostOf('redis://'), 'localhost');
});

test('messageWithoutPassword replaces the password, raw and percent-decoded, wherever it appears', () => {
  const url = 'smtp://mailer:p%40ss%3Aword@smtp.example.test';
  assert.equal(
    messageWithoutPassword(new Error('auth failed for p@ss:word (p%40ss%3Aword), p@ss:word'), url),
    'auth failed for *** (***), ***',
  );
  assert.equal(messageWithoutPassword('not an Error: p@ss:word', url), 'not an Error: ***');
});

test('a URL without a password, or no URL at all, leaves the message as it is', () => {
  assert.equal(messageWithoutPassword(new Error('refused'), 'redis://cache:6379'), 'refused');
  assert.equal(messageWithoutPassword(new Error('refused'), 'redis://user@cache:6379'), 'refused');
  assert.equal(messageWithoutPassword(new Error('refused'), 'redis://user:@cache:6379'), 'refused');
  assert.equal(messageWithoutPassword(new Error('disk full'), undefined), 'disk full');
});

test('a malformed escape in the password is still redacted in its raw form', () => {
  assert.equal(messageWithoutPassword(new Error('bad %zz!'), 'redis://:%zz!@cache'), 'bad ***');
});
