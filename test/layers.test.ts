import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * The import graph of `src/` against the layers CONTRIBUTING.md lists: imports point down the
 * list or stay within a layer, and none forms a cycle, type-only imports included.
 */

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

interface Layer {
  rank: number;
  name: string;
  paths: string[];
}

/** The numbered list under "### Layers" in CONTRIBUTING.md: each item's `src/…` paths. */
function documentedLayers(): Layer[] {
  const text = readFileSync(join(ROOT, 'CONTRIBUTING.md'), 'utf8');
  const start = text.indexOf('\n### Layers\n');
  assert.notEqual(start, -1, 'CONTRIBUTING.md has a "### Layers" section');
  const section = text.slice(start + 1).split(/\n#{2,3} /)[0] ?? '';
  const items: string[] = [];
  for (const line of section.split('\n')) {
    if (/^\d+\. /.test(line)) items.push(line);
    else if (/^ {2,}\S/.test(line) && items.length > 0) items[items.length - 1] += ` ${line.trim()}`;
  }
  return items.map((item, rank) => ({
    rank,
    name: item.replace(/^\d+\. /, '').split(/[:,(]/)[0] ?? item,
    paths: [...item.matchAll(/`(src\/[^`]*)`/g)].map((match) => match[1] ?? ''),
  }));
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** The files of `src/` a file imports, `import type` and `export … from` included. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const specifiers = [
    ...text.matchAll(/^\s*(?:import|export)\b[^;'"]*?\bfrom\s+'(\.[^']+)'/gm),
    ...text.matchAll(/^\s*import\s+'(\.[^']+)'/gm),
    ...text.matchAll(/\bimport\(\s*'(\.[^']+)'\s*\)/g),
  ].map((match) => match[1] ?? '');
  return specifiers.map((specifier) => relative(ROOT, resolve(ROOT, dirname(file), specifier)));
}

/** The layer of a file: the most specific documented path that names it. */
function layerOf(file: string, layers: readonly Layer[]): Layer | undefined {
  let found: { layer: Layer; length: number } | undefined;
  for (const layer of layers) {
    for (const path of layer.paths) {
      const names = path.endsWith('/') ? file.startsWith(path) : file === path;
      if (names && path.length > (found?.length ?? -1)) found = { layer, length: path.length };
    }
  }
  return found?.layer;
}

/** Every cycle's files, one cycle per strongly connected set of files (Tarjan). */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, index.size);
    low.set(file, index.get(file) ?? 0);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file) ?? 0, low.get(next) ?? 0));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file) ?? 0, index.get(next) ?? 0));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const members: string[] = [];
    for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
      onStack.delete(member);
      members.push(member);
      if (member === file) break;
    }
    if (members.length > 1 || (graph.get(file) ?? []).includes(file)) found.push(members.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

const layers = documentedLayers();
const files = sourceFiles('src');
const graph = new Map(files.map((file) => [file, importsOf(file)]));

test('CONTRIBUTING.md lists the layers, and every path it names exists', () => {
  assert.ok(layers.length >= 2, 'at least two layers');
  for (const { name, paths } of layers) {
    assert.ok(paths.length > 0, `the layer "${name}" names its paths`);
    for (const path of paths) assert.ok(existsSync(join(ROOT, path)), `${path} (${name}) exists`);
  }
});

test('every file of src/ belongs to a layer', () => {
  assert.deepEqual(
    files.filter((file) => !layerOf(file, layers)),
    [],
  );
});

test('every import points down the layers or stays within one', () => {
  const upward: string[] = [];
  for (const [file, imported] of graph) {
    const from = layerOf(file, layers);
    for (const target of imported) {
      const to = layerOf(target, layers);
      if (from && to && to.rank < from.rank) upward.push(`${file} (${from.name}) → ${target} (${to.name})`);
    }
  }
  assert.deepEqual(upward, []);
});

test('no import cycle, not even through type-only imports', () => {
  for (const imported of graph.values()) {
    for (const target of imported) assert.ok(graph.has(target), `${target} is a file of src/`);
  }
  assert.deepEqual(cycles(graph), []);
});
