import { Option } from 'commander';
import { RETIRE_MARGIN_MS, type RetireSelection, retireKeys } from '../../oauth/key-rotation.ts';
import { openKeyRingStore } from '../../services.ts';
import { printRing, secureBeforeWriting } from './keys-list.ts';
import type { RegisterCommand } from './register-command.ts';

export const registerKeysRetire: RegisterCommand = (program, loadConfig) => {
  program
    .command('keys:retire')
    .description(
      'Remove earlier keys. By default only those whose tokens have all expired (superseded longer ' +
        `ago than ACCESS_TOKEN_TTL or REFRESH_TOKEN_TTL, plus ${RETIRE_MARGIN_MS / 60_000} minutes), ` +
        'so nobody is signed out',
    )
    .addOption(
      new Option('--all', 'every key but the current ones: tokens made with them are refused at once'),
    )
    .addOption(
      new Option('--id <id>', 'one earlier key, by kid or refresh-key id (see keys:list)').conflicts('all'),
    )
    .option('--dir <dir>', 'change this directory instead of KEYS_DIR')
    .action(async (options: { all?: boolean; id?: string; dir?: string }) => {
      const config = loadConfig();
      const selection: RetireSelection = options.all
        ? { kind: 'all' }
        : options.id !== undefined
          ? { kind: 'id', id: options.id }
          : {
              kind: 'expired',
              accessTokenTtlSeconds: config.accessTokenTtl,
              refreshTokenTtlSeconds: config.refreshTokenTtl,
            };
      const dir = options.dir ?? config.keysDir;
      await secureBeforeWriting(dir);
      const { retired, ring } = await retireKeys(openKeyRingStore(dir), selection);
      console.log(retired.length > 0 ? `Retired ${retired.join(', ')}` : 'No key to retire yet');
      printRing(ring);
    });
};
