/**
 * Where the CPU goes during a measurement: the cores each group of processes (load generator,
 * server, FerretDB, Redis) kept busy, from their user + system time in /proc (Linux). On two
 * shared cores this says what limits a row better than its request rate alone.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { childPids } from '../test/support/processes.ts';

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** Groups of processes by name, e.g. a server's primary and its cluster workers. */
export type ProcessGroups = Record<string, number[]>;

/** CPU seconds a process has used, all its threads; 0 once it is gone. */
function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: parse after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the command name.
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** A process and all its descendants. */
export function processTree(pid: number): number[] {
  return [pid, ...childPids(pid).flatMap(processTree)];
}

function groupSeconds(groups: ProcessGroups): Record<string, number> {
  return Object.fromEntries(
    Object.entries(groups).map(([name, pids]) => [name, pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0)]),
  );
}

/**
 * Runs `work` and gives, for each group, the CPU seconds it used meanwhile and the cores it
 * kept busy on average.
 */
export async function cpuDuring<T>(
  groups: ProcessGroups,
  work: () => Promise<T>,
): Promise<{ result: T; seconds: Record<string, number>; cores: Record<string, number> }> {
  const before = groupSeconds(groups);
  const started = performance.now();
  const result = await work();
  const elapsed = (performance.now() - started) / 1000;
  const seconds = Object.fromEntries(
    Object.entries(groupSeconds(groups)).map(([name, used]) => [name, used - (before[name] ?? 0)]),
  );
  return {
    result,
    seconds,
    cores: Object.fromEntries(Object.entries(seconds).map(([name, used]) => [name, used / elapsed])),
  };
}

/** The pids among this process's children whose command is `command` (e.g. `ferretdb`). */
export function childrenNamed(command: string): number[] {
  return childPids(process.pid).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === command;
    } catch {
      return false;
    }
  });
}
