import type { AccountKind } from '../accounts/model.ts';
import type {
  RefreshFamilyRecords,
  RefreshTokenFamily,
  RefreshTokenGeneration,
  RefreshTokenRetry,
  RefreshTokenRotation,
  RefreshTokenState,
  RefreshTokenStore,
} from './model.ts';
import { decideRotation, firstRecord, presentedState, revokedRecord } from './refresh-family.ts';

/**
 * More lost compare-and-sets than this in one call means something writes the family in a
 * loop: each loss means another call's write landed, and a rotation settles a family in two
 * (the winner rotates; every loser then finds a retry or a reuse, which writes at most once).
 */
const MAX_ATTEMPTS = 8;

/**
 * A RefreshTokenStore over records that only read and compare-and-set: every call reads the
 * family, decides by the rules of `refresh-family.ts`, and writes with the version it read;
 * on a lost write it reads and decides again. So of concurrent rotations of one token exactly
 * one rotates, and the others find its retry record.
 */
export class VersionedRefreshTokenStore implements RefreshTokenStore {
  readonly #records: RefreshFamilyRecords;
  readonly #now: () => number;

  constructor(records: RefreshFamilyRecords, now: () => number = Date.now) {
    this.#records = records;
    this.#now = now;
  }

  async create(family: RefreshTokenFamily, first: RefreshTokenGeneration): Promise<boolean> {
    return this.#settle(family.familyId, (read) => {
      if (read && read.record.family.expiresAt > this.#now()) return { answer: false };
      return { answer: true, write: firstRecord(family, first) };
    });
  }

  async inspect(familyId: string, presented: RefreshTokenGeneration): Promise<RefreshTokenState> {
    const read = await this.#records.read(familyId);
    return presentedState(read?.record ?? null, presented, this.#now());
  }

  async rotate(
    family: RefreshTokenFamily,
    presented: RefreshTokenGeneration,
    successor: RefreshTokenGeneration,
    retry?: RefreshTokenRetry,
  ): Promise<RefreshTokenRotation> {
    return this.#settle(family.familyId, (read) => {
      const { verdict, next } = decideRotation(
        read?.record ?? null,
        { family, presented, successor, ...(retry && { retry }) },
        this.#now(),
      );
      return next ? { answer: verdict, write: next } : { answer: verdict };
    });
  }

  async revokeFamily(familyId: string): Promise<void> {
    await this.#settle(familyId, (read) => {
      if (!read || read.record.revoked || read.record.family.expiresAt <= this.#now())
        return { answer: undefined };
      return { answer: undefined, write: revokedRecord(read.record) };
    });
  }

  async revokeSubject(accountKind: AccountKind, subject: string): Promise<void> {
    const families = await this.#records.familiesOf(accountKind, subject);
    await Promise.all(families.map((familyId) => this.revokeFamily(familyId)));
  }

  /** Reads, decides, and writes with the version read, again while another write wins. */
  async #settle<T>(
    familyId: string,
    decide: (read: Awaited<ReturnType<RefreshFamilyRecords['read']>>) => {
      answer: T;
      write?: Parameters<RefreshFamilyRecords['write']>[0];
    },
  ): Promise<T> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const read = await this.#records.read(familyId);
      const { answer, write } = decide(read);
      if (!write || (await this.#records.write(write, read?.version ?? 0))) return answer;
    }
    throw new Error(`Refresh-token family ${familyId} kept changing under ${MAX_ATTEMPTS} writes`);
  }
}
