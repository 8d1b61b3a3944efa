import { rotateKeys } from '../../oauth/key-rotation.ts';
import { openKeyRingStore } from '../../services.ts';
import { printRing, secureBeforeWriting } from './keys-list.ts';
import type { RegisterCommand } from './register-command.ts';

export const registerKeysRotate: RegisterCommand = (program, loadConfig) => {
  program
    .command('keys:rotate')
    .description(
      'Add a new signing key and refresh-token key that are used from now on; the earlier keys ' +
        'keep verifying the tokens made with them until keys:retire',
    )
    .option('--dir <dir>', 'change this directory instead of KEYS_DIR')
    .action(async (options: { dir?: string }) => {
      const dir = options.dir ?? loadConfig().keysDir;
      await secureBeforeWriting(dir);
      const ring = await rotateKeys(openKeyRingStore(dir));
      printRing(ring);
      console.log('Nobody is signed out. Once the earlier tokens have expired, run keys:retire.');
    });
};
