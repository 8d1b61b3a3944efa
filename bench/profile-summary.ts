/**
 * Reads a V8 CPU profile (`node --cpu-prof`) and tells where the sampled thread spent its
 * time within a window: self time by module group and by function, and the total (inclusive)
 * time of the service's own functions.
 */
import { readFileSync } from 'node:fs';

/** The repository's root, as the scripts' URLs in a profile start. */
const REPO_URL = new URL('../', import.meta.url).href;

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Time in microseconds per key. */
export type Times = Map<string, number>;

export interface ProfileSummary {
  /** Sampled microseconds within the window, idle included. */
  sampled: number;
  /** Self time by module group (see `groupOf`). */
  groups: Times;
  /** Self time by function. */
  functions: Times;
  /** Inclusive time of the functions in the service's own sources (src/). */
  ownTotals: Times;
}

/**
 * A frame's module, from its script: a package of node_modules, a file of the service, a
 * Node.js internal module. Frames without a script (builtins such as JSON.parse, or
 * `(garbage collector)`) are named by themselves.
 */
function moduleOf(url: string): string | undefined {
  if (url === '') return undefined;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg?.[1]) return pkg[1];
  if (url.startsWith(REPO_URL)) return url.slice(REPO_URL.length);
  return url;
}

/** The groups the summaries are read in; anything else is shown by its module name. */
const GROUPS: [RegExp, string][] = [
  [/^jose$/, 'jose'],
  [
    /^node:internal\/crypto\/webcrypto|^node:internal\/crypto\/(keys|util|webidl|cfrg|rsa|hash|sig)/,
    'node crypto (JS side)',
  ],
  [/^node:(_http_|internal\/http|http$)/, 'node http'],
  [/^node:(net|internal\/stream_base_commons|internal\/streams|stream|internal\/net)/, 'node net & streams'],
  [/^node:internal\/(process\/task_queues|async_hooks|timers)|^node:timers/, 'node event loop'],
  [/^node:internal\/url|^node:url/, 'node url'],
  [/^@sinclair\/typebox$/, 'typebox'],
  [/^src\/http\//, 'ours: src/http'],
  [/^src\/oauth\//, 'ours: src/oauth'],
  [/^src\/stores\//, 'ours: src/stores'],
  [/^src\/accounts\//, 'ours: src/accounts'],
  [/^src\//, 'ours: other src'],
];

function groupOf(module: string): string {
  for (const [pattern, group] of GROUPS) if (pattern.test(module)) return group;
  return module;
}

const add = (times: Times, key: string, micros: number) => times.set(key, (times.get(key) ?? 0) + micros);

/** Self time of the samples taken between `from` and `to` (microseconds of the monotonic clock). */
export function summariseProfile(path: string, from: number, to: number): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

  // A builtin without a script (JSON.parse, a RegExp) counts towards the module that called it.
  const groupOfNode = new Map<number, string>();
  const labelOfNode = new Map<number, string>();
  const describe = (id: number): { group: string; label: string } => {
    const known = groupOfNode.get(id);
    if (known !== undefined) return { group: known, label: labelOfNode.get(id) ?? '' };
    const { functionName, url, lineNumber } = byId.get(id)?.callFrame ?? {
      functionName: '',
      url: '',
      lineNumber: 0,
    };
    const module = moduleOf(url);
    const name = functionName || '(anonymous)';
    let group: string;
    if (module !== undefined) group = groupOf(module);
    else if (name.startsWith('(')) group = name;
    else {
      const up = parent.get(id);
      group = up === undefined ? 'native' : `${describe(up).group}`;
    }
    const label = module === undefined ? `${name} [native]` : `${name} (${module}:${lineNumber + 1})`;
    groupOfNode.set(id, group);
    labelOfNode.set(id, label);
    return { group, label };
  };

  const summary: ProfileSummary = {
    sampled: 0,
    groups: new Map(),
    functions: new Map(),
    ownTotals: new Map(),
  };
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    // A sample stands for the time until the next one.
    const micros = profile.timeDeltas[i + 1] ?? 0;
    if (at < from || at > to) continue;
    const id = profile.samples[i] ?? 0;
    const { group, label } = describe(id);
    summary.sampled += micros;
    add(summary.groups, group, micros);
    add(summary.functions, label, micros);
    const seen = new Set<string>();
    for (let up: number | undefined = id; up !== undefined; up = parent.get(up)) {
      const own = describe(up);
      if (own.group.startsWith('ours:') && !seen.has(own.label)) {
        seen.add(own.label);
        add(summary.ownTotals, own.label, micros);
      }
    }
  }
  return summary;
}

/** The largest entries, as lines: percent of `whole`, and milliseconds per `per` (a request). */
export function topLines(times: Times, whole: number, per: number, count: number): string[] {
  return [...times.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(
      ([key, micros]) =>
        `${((100 * micros) / whole).toFixed(1).padStart(5)}%  ${(micros / 1000 / per).toFixed(4).padStart(7)} ms  ${key}`,
    );
}
