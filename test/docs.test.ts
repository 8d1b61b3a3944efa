import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DOCUMENTS = [
  'README.md',
  'CONTRIBUTING.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** The text outside fenced code blocks, where headings and links live. */
function withoutCodeBlocks(markdown: string): string {
  return markdown.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
}

/** The anchors GitHub gives the headings of a document (a repeated one gets `-1`, `-2`, …). */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const [, title] of withoutCodeBlocks(markdown).matchAll(/^#{1,6} +(.+)$/gm)) {
    const slug = (title ?? '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^a-z0-9 _-]/g, '')
      .replaceAll(' ', '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    result.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return result;
}

/** Relative link targets: `[text](target)`, outside code. */
function links(markdown: string): string[] {
  const text = withoutCodeBlocks(markdown).replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map(([, target]) => target ?? '')
    .filter((target) => !/^[a-z]+:/i.test(target));
}

describe('documentation', () => {
  for (const document of DOCUMENTS) {
    test(`every relative link in ${document} leads to a file and heading that exist`, () => {
      const source = readFileSync(join(ROOT, document), 'utf8');
      const broken: string[] = [];
      for (const target of links(source)) {
        const [path = '', anchor] = target.split('#');
        const file = path === '' ? join(ROOT, document) : join(ROOT, dirname(document), path);
        if (!existsSync(file)) {
          broken.push(`${target}: no file ${relative(ROOT, file)}`);
        } else if (
          anchor !== undefined &&
          !(statSync(file).isFile() && anchors(readFileSync(file, 'utf8')).has(anchor))
        ) {
          broken.push(`${target}: no heading #${anchor} in ${relative(ROOT, file)}`);
        }
      }
      assert.deepEqual(broken, []);
    });
  }

  test('nothing in the repository cites documents that are not in it', () => {
    const citing = [...DOCUMENTS, 'docker-compose.yml', ...sources('src'), ...sources('test')].filter(
      (file) => file !== SELF && /\b(SPEC|DESIGN)(\.md)?\b/.test(readFileSync(join(ROOT, file), 'utf8')),
    );
    assert.deepEqual(citing, []);
  });
});

const SELF = relative(ROOT, fileURLToPath(import.meta.url));

/** Every file under a directory, relative to the repository. */
function sources(directory: string): string[] {
  return readdirSync(join(ROOT, directory), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)));
}
