import { KEY_RING_RELOAD_MS } from '../../oauth/key-ring.ts';
import type { KeyRingState } from '../../oauth/key-ring-store.ts';
import { openKeyRingStore, secureKeyDirectory } from '../../services.ts';
import type { RegisterCommand } from './register-command.ts';

export const registerKeysList: RegisterCommand = (program, loadConfig) => {
  program
    .command('keys:list')
    .description('Show the keys in KEYS_DIR: which signs, which only verify, and since when')
    .option('--dir <dir>', 'read this directory instead of KEYS_DIR')
    .action(async (options: { dir?: string }) => {
      printRing(await openKeyRingStore(options.dir ?? loadConfig().keysDir).read());
    });
};

/** One line per key, current ones first, for the keys commands to end with. */
export function printRing(ring: KeyRingState): void {
  const since = (date: Date) => date.toISOString().replace(/\.\d+Z$/, 'Z');
  const line = (kind: string, id: string, key: { createdAt: Date; supersededAt?: Date }, role: string) =>
    `${kind.padEnd(10)} ${id.padEnd(43)} ${role.padEnd(8)} ${
      key.supersededAt ? `superseded ${since(key.supersededAt)}` : `since ${since(key.createdAt)}`
    }`;
  console.log(
    ring.generation === 0
      ? 'Key files of an earlier version (private.key, public.key, encryption.key):'
      : `Key ring generation ${ring.generation} (running services use it within ${KEY_RING_RELOAD_MS / 1000} s):`,
  );
  ring.signing.forEach((key, index) => {
    console.log(line('signing', key.kid, key, index === 0 ? 'signs' : 'verifies'));
  });
  ring.refreshTokenMac.forEach((key, index) => {
    console.log(line('refresh', key.id, key, index === 0 ? 'mints' : 'verifies'));
  });
}

/** Before a keys command writes: a key directory open to others is tightened or named (stderr). */
export async function secureBeforeWriting(dir: string): Promise<void> {
  const notice = await secureKeyDirectory(dir);
  if (notice) console.error(`${notice.level === 'warn' ? 'warning: ' : ''}${notice.message}`);
}
