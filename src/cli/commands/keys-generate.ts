import { generateKeyFiles } from '../../oauth/keys.ts';
import type { RegisterCommand } from './index.ts';

export const registerKeysGenerate: RegisterCommand = (program, loadConfig) => {
  program
    .command('keys:generate')
    .description('Write a new RSA key pair and refresh-token encryption key to KEYS_DIR')
    .option(
      '--force',
      'replace existing key files (invalidates every issued access and refresh token)',
      false,
    )
    .option('--dir <dir>', 'write to this directory instead of KEYS_DIR')
    .action(async (options: { force: boolean; dir?: string }) => {
      const dir = options.dir ?? loadConfig().keysDir;
      await generateKeyFiles(dir, { force: options.force });
      console.log(`Wrote private.key, public.key and encryption.key to ${dir}`);
      if (options.force)
        console.log('Every access and refresh token issued with the old keys is now invalid.');
    });
};
