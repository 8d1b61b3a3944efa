import { createHash } from 'node:crypto';
import type { RedisClient } from './connect.ts';

/** A Lua script and the SHA-1 Redis caches it under. */
export interface Script {
  lua: string;
  sha: string;
}

export function script(lua: string): Script {
  return { lua, sha: createHash('sha1').update(lua).digest('hex') };
}

/** EVALSHA, falling back to EVAL once when the server lost its script cache (e.g. a restart). */
export async function runScript(
  redis: RedisClient,
  s: Script,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<unknown> {
  try {
    return await redis.evalsha(s.sha, keys.length, ...keys, ...args);
  } catch (error) {
    if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
    return redis.eval(s.lua, keys.length, ...keys, ...args);
  }
}
