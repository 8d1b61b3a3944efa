/**
 * The Compose files are loaded by compose-go, the loader of `docker compose`, with `.env.example`
 * as the env file, as an operator's `cp .env.example .env && docker compose up` would: a typo, an
 * unknown key, a bad interpolation or a dependency on no service fails here as it would for the
 * operator. Mutated copies of the real files prove that each of these is refused, by name.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { checkCompose, composeCheckSkipped } from '../support/compose.ts';
import { REPO_ROOT } from '../support/processes.ts';

const FILES = ['docker-compose.yml', 'docker-compose.ha.yml'];

interface Mutation {
  what: string;
  file: string;
  from: string;
  to: string;
  /** What the refusal must say. */
  refusal: RegExp;
}

const MUTATIONS: Mutation[] = [
  {
    what: 'an unknown top-level key (a typo of services)',
    file: 'docker-compose.yml',
    from: '\nservices:\n',
    to: '\nservces:\n',
    refusal: /additional properties 'servces' not allowed/,
  },
  {
    what: 'an unknown service key',
    file: 'docker-compose.yml',
    from: '    init: true\n',
    to: '    init: true\n    restart_policy: always\n',
    refusal: /services\.app\.restart_policy: no such attribute/,
  },
  {
    what: "a typo'd service key, which our own reading took for no dependency at all",
    file: 'docker-compose.yml',
    from: '    depends_on:\n      app:',
    to: '    depend_on:\n      app:',
    refusal: /services\.nginx\.depend_on: no such attribute/,
  },
  {
    what: 'an unknown healthcheck key',
    file: 'docker-compose.ha.yml',
    from: '      interval: 15s\n',
    to: '      intervall: 15s\n',
    refusal: /services\.app\.healthcheck additional properties 'intervall' not allowed/,
  },
  {
    what: 'a value of the wrong type',
    file: 'docker-compose.yml',
    from: '      retries: 3\n',
    to: '      retries: three\n',
    refusal: /services\.app\.healthcheck\.retries.*"three"/,
  },
  {
    what: 'a required variable that .env.example does not set',
    file: 'docker-compose.yml',
    from: `\${NGINX_SERVER_NAME:-localhost}`,
    to: `\${NGINX_SERVER_NAME:?set NGINX_SERVER_NAME in .env}`,
    refusal: /required variable NGINX_SERVER_NAME is missing a value: set NGINX_SERVER_NAME in \.env/,
  },
  {
    what: 'a variable that is not set anywhere (compose warns and deploys a blank)',
    file: 'docker-compose.yml',
    from: `\${NGINX_SERVER_NAME:-localhost}`,
    to: `\${NGINX_SERVERNAME}`,
    refusal: /"NGINX_SERVERNAME" variable is not set/,
  },
  {
    what: 'an unclosed interpolation',
    file: 'docker-compose.ha.yml',
    from: `BODY_LIMIT: \${BODY_LIMIT:-1mb}`,
    to: `BODY_LIMIT: \${BODY_LIMIT:-1mb`,
    refusal: /invalid interpolation format for services\.app\.environment\.BODY_LIMIT/,
  },
  {
    what: 'a depends_on naming no service',
    file: 'docker-compose.yml',
    from: '    depends_on:\n      app:',
    to: '    depends_on:\n      ap:',
    refusal: /service "nginx" depends on undefined service "ap"/,
  },
  {
    what: 'a depends_on condition that does not exist',
    file: 'docker-compose.ha.yml',
    from: 'condition: service_completed_successfully',
    to: 'condition: service_completed',
    refusal: /services\.app\.depends_on\.mongo-init\.condition value must be one of/,
  },
  {
    what: 'a dependency cycle',
    file: 'docker-compose.yml',
    from: '  mongo:\n    image: mongo:7\n',
    to: '  mongo:\n    image: mongo:7\n    depends_on: [nginx]\n',
    refusal: /dependency cycle detected: .*mongo -> nginx/,
  },
  {
    what: 'a named volume that is not declared',
    file: 'docker-compose.ha.yml',
    from: '      - m2-data:/data/db',
    to: '      - m2-db:/data/db',
    refusal: /service "m2" refers to undefined volume m2-db/,
  },
  {
    what: 'a required env_file that does not exist',
    file: 'docker-compose.yml',
    from: '      - path: .env.example\n',
    to: '      - path: .env.exmaple\n',
    refusal: /env file \S*\/\.env\.exmaple not found/,
  },
];

describe('compose-go loads the Compose files as docker compose does', { skip: composeCheckSkipped }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'compose-mutations-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** A copy of a repository file, changed or not, loaded from the repository's directory. */
  function checkCopy(file: string, text: string) {
    const copy = join(dir, basename(file));
    writeFileSync(copy, text);
    return checkCompose(copy);
  }

  for (const file of FILES) {
    test(`${file} loads with .env.example, and so does a copy of it outside the repository`, () => {
      for (const result of [
        checkCompose(file),
        checkCopy(file, readFileSync(join(REPO_ROOT, file), 'utf8')),
      ]) {
        assert.equal(result.status, 0, result.stderr);
        assert.equal(result.stderr, '');
        const project = JSON.parse(result.stdout) as { services: Record<string, unknown> };
        assert.ok(Object.keys(project.services).length > 0);
      }
    });
  }

  for (const { what, file, from, to, refusal } of MUTATIONS) {
    test(`refuses ${what} (${file})`, () => {
      const original = readFileSync(join(REPO_ROOT, file), 'utf8');
      assert.ok(original.includes(from), `${file} still contains ${JSON.stringify(from)}`);
      const { status, stdout, stderr } = checkCopy(file, original.replace(from, to));
      assert.equal(status, 1, `refused, exit status 1 (stdout: ${stdout.slice(0, 200)})`);
      assert.equal(stdout, '', 'no project printed');
      assert.match(stderr, /^compose-check: /);
      assert.match(stderr, refusal);
    });
  }

  test('refuses a file that does not exist', () => {
    const { status, stderr } = checkCompose('docker-compose.missing.yml');
    assert.equal(status, 1);
    assert.match(stderr, /docker-compose\.missing\.yml/);
  });
});
