/**
 * The Compose files as `docker compose` reads them: test/deploy/compose-check, a small Go program
 * on compose-go (the loader of docker compose), loads a file from the repository's directory with
 * the env files given (unless told otherwise `.env.example` and the credentials an operator must
 * add to it, OPERATOR_ENV) and prints the normalized project as JSON, or refuses the file,
 * naming the problem, with exit status 1.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onPath } from './backends.ts';
import { REPO_ROOT } from './processes.ts';

const CHECKER_SOURCE = join(REPO_ROOT, 'test/deploy/compose-check');
/** .env.example and the credentials the Compose files require, which it leaves to the operator. */
export const OPERATOR_ENV = ['.env.example', 'test/deploy/operator-credentials.env'] as const;
/** Where the official Go release installs itself, when its bin directory is not on PATH. */
const GO_INSTALL = '/usr/local/go/bin/go';
const go = onPath('go') ? 'go' : existsSync(GO_INSTALL) ? GO_INSTALL : undefined;

/** Why the Compose files cannot be loaded here (a `skip` reason), or false. */
export const composeCheckSkipped: string | false = go
  ? false
  : `Go is not installed (not on PATH, nor ${GO_INSTALL}): the Compose files were not loaded with compose-go`;

/** A volume entry as compose-go normalizes it: host paths absolute, named volumes by name. */
export interface ComposeMount {
  type: 'volume' | 'bind' | 'tmpfs' | 'npipe' | 'cluster' | 'image';
  source?: string;
  target: string;
  read_only?: boolean;
}

/** The parts of a normalized service the tests read. */
export interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile?: string };
  /** `required` is left out when true. */
  env_file?: { path: string; required?: boolean }[];
  /** The `environment` entries over the env files' values, interpolated. */
  environment?: Record<string, string | null>;
  volumes?: ComposeMount[];
  ports?: { target: number; published?: string; protocol?: string }[];
  expose?: string[];
  command?: string[] | null;
  depends_on?: Record<string, { condition: string; required: boolean }>;
  profiles?: string[];
  healthcheck?: { test?: string[] };
  restart?: string;
  /** cpus as a number, memory in bytes (as a string). */
  deploy?: { resources?: { limits?: { cpus?: number; memory?: string } } };
}

export interface ComposeProject {
  name: string;
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

export interface CheckResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

let binary: string | undefined;

/** Builds the checker once per test process, into a temporary directory (Go caches the build). */
function checker(): string {
  if (binary) return binary;
  assert.ok(go, composeCheckSkipped || 'Go is installed');
  const dir = mkdtempSync(join(tmpdir(), 'compose-check-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const output = join(dir, 'compose-check');
  const build = spawnSync(go, ['build', '-buildvcs=false', '-o', output, '.'], {
    cwd: CHECKER_SOURCE,
    encoding: 'utf8',
    timeout: 300_000,
  });
  assert.equal(build.status, 0, `go build of ${CHECKER_SOURCE} failed:\n${build.stderr}${build.error ?? ''}`);
  binary = output;
  return output;
}

/**
 * Loads a Compose file (a path relative to the repository, or absolute) as `docker compose`
 * would from the repository's directory, with these env files (relative to the repository too).
 */
export function checkCompose(file: string, envFiles: readonly string[] = OPERATOR_ENV): CheckResult {
  const args = ['-project-directory', REPO_ROOT, ...envFiles.flatMap((env) => ['-env-file', env]), file];
  const run = spawnSync(checker(), args, { cwd: REPO_ROOT, encoding: 'utf8', timeout: 60_000 });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** The normalized project of a Compose file the loader accepts. */
export function loadCompose(file: string, envFiles?: readonly string[]): ComposeProject {
  const { status, stdout, stderr } = checkCompose(file, envFiles);
  assert.equal(status, 0, `compose-go refuses ${file}:\n${stderr}`);
  return JSON.parse(stdout) as ComposeProject;
}
