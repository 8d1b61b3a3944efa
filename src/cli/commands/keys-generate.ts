import { generateKeys } from '../../oauth/key-rotation.ts';
import { openKeyRingStore } from '../../services.ts';
import { printRing, secureBeforeWriting } from './keys-list.ts';
import type { RegisterCommand } from './register-command.ts';

export const registerKeysGenerate: RegisterCommand = (program, loadConfig) => {
  program
    .command('keys:generate')
    .description('Write a new key ring (a signing key and a refresh-token key) to KEYS_DIR')
    .option(
      '--force',
      'replace every existing key at once (invalidates every issued access and refresh token)',
      false,
    )
    .option('--dir <dir>', 'write to this directory instead of KEYS_DIR')
    .action(async (options: { force: boolean; dir?: string }) => {
      const dir = options.dir ?? loadConfig().keysDir;
      await secureBeforeWriting(dir);
      printRing(await generateKeys(openKeyRingStore(dir), { force: options.force }));
      if (options.force)
        console.log(
          'Every access and refresh token issued with the old keys is now invalid (to keep them valid, use keys:rotate).',
        );
    });
};
