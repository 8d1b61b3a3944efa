import type { AccountKind } from '../accounts/model.ts';
import { ServiceUnavailable } from '../errors.ts';
import type {
  RefreshFamilyRecord,
  RefreshFamilyRecords,
  RefreshTokenFamily,
  RefreshTokenGeneration,
  RefreshTokenRetry,
  RefreshTokenRotation,
  RefreshTokenState,
  RefreshTokenStore,
  VersionedFamilyRecord,
} from './model.ts';
import {
  type AnswerOutcome,
  decideRotation,
  firstRecord,
  overtaken,
  presentedState,
  revokedRecord,
  settleAnswer,
} from './refresh-family.ts';

/**
 * More lost compare-and-sets than this in one call means something writes the family in a
 * loop: each loss means another call's write landed, and a rotation settles a family in a
 * few (the winner rotates; every loser then finds a retry or a reuse, which writes at most
 * once, or finds its mark overwritten by another retry's).
 */
const MAX_ATTEMPTS = 8;

/** What a decision on a read record answers, and the record to write in its place, if any. */
interface Decision<T> {
  answer: T;
  write?: RefreshFamilyRecord;
  /** Answer without writing, should the write lose to one that makes it moot. */
  moot?: (fresh: VersionedFamilyRecord | null) => boolean;
}

/** A decision carried out: its answer, and the record as written, if it was. */
interface Settled<T> {
  answer: T;
  written?: VersionedFamilyRecord;
}

/**
 * A RefreshTokenStore over records that only read and compare-and-set: every call reads the
 * family, decides by the rules of `refresh-family.ts`, and writes with the version it read;
 * on a lost write it reads and decides again. So of concurrent rotations of one token exactly
 * one rotates, and the others find its retry record.
 *
 * A refresh inspects its token, then rotates it: the rotation starts from the record the
 * inspection read (kept by the presented token, which the grant hands back), so a refresh
 * costs one read and one write, as a single script each would. The write's version makes
 * that safe; an answer that changes nothing is decided on a fresh read.
 */
export class VersionedRefreshTokenStore implements RefreshTokenStore {
  readonly #records: RefreshFamilyRecords;
  readonly #now: () => number;
  /** What `inspect` read, by the presented token it read it for, until `rotate` takes it. */
  readonly #inspected = new WeakMap<RefreshTokenGeneration, VersionedFamilyRecord | null>();
  /** The end of an answer's wait still being written, by family (see `rotate`). */
  readonly #settling = new Map<string, Promise<void>>();

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
    await this.#landed(familyId);
    const read = await this.#records.read(familyId);
    this.#inspected.set(presented, read);
    return presentedState(read?.record ?? null, presented, this.#now());
  }

  /**
   * Behind replicas (`records.acknowledged`) the answer is marked on the retry record while
   * it waits for them, and its window starts once they confirm it, or once it fails after
   * an earlier answer went out (`settleAnswer`). A confirmed answer goes out without waiting
   * for that last write (`amend`), sent as it goes: until it lands the mark keeps the window
   * open, as it did while the replicas were asked. This process reads the family only once
   * it has landed, so it sees its own writes in order.
   */
  async rotate(
    family: RefreshTokenFamily,
    presented: RefreshTokenGeneration,
    successor: RefreshTokenGeneration,
    retry?: RefreshTokenRetry,
  ): Promise<RefreshTokenRotation> {
    const startedAt = this.#now();
    const acknowledged = this.#records.acknowledged;
    const pending = retry && acknowledged ? successor.mac : undefined;
    const outcome = (answered: boolean): AnswerOutcome | undefined =>
      pending && retry
        ? {
            mark: pending,
            replacedMac: presented.mac,
            until: this.#now() + (retry.until - startedAt),
            ...(answered && { limit: this.#now() + (retry.limit - startedAt) }),
          }
        : undefined;
    const inspected = this.#inspected.get(presented);
    this.#inspected.delete(presented);
    if (inspected === undefined) await this.#landed(family.familyId);
    let settled: Settled<RefreshTokenRotation>;
    try {
      settled = await this.#settleWrite(
        family.familyId,
        (read) => {
          const request = {
            family,
            presented,
            successor,
            ...(retry && { retry }),
            ...(pending && { pending }),
          };
          const { verdict, next } = decideRotation(read?.record ?? null, request, this.#now());
          // A retry's answer hands out a rotation that may not be replicated yet: writing,
          // it waits for the replicas to have that rotation too.
          const write = next ?? (acknowledged && verdict.state === 'retry' ? read?.record : undefined);
          const base = read?.record;
          return {
            answer: verdict,
            ...(write && { write }),
            ...(base &&
              verdict.state === 'retry' && {
                moot: (fresh) => overtaken(base, fresh?.record ?? null, pending !== undefined),
              }),
          };
        },
        inspected,
      );
    } catch (error) {
      // Not answered: a mark this answer may have left would keep the token a retry for good.
      await this.#settleAnswer(family.familyId, outcome(false));
      throw error;
    }
    const { answer } = settled;
    if (answer.state === 'rotated' || answer.state === 'retry')
      this.#settleLater(family.familyId, outcome(true), settled.written);
    return answer;
  }

  /**
   * Ends an answer's wait without holding the answer up: its write is sent now, and the
   * family's next read in this process waits for it (and for any other still out).
   */
  #settleLater(familyId: string, outcome: AnswerOutcome | undefined, written?: VersionedFamilyRecord): void {
    if (!outcome) return;
    const earlier = this.#settling.get(familyId);
    const mine = this.#settleAnswer(familyId, outcome, written);
    const settling: Promise<void> = (earlier ? Promise.all([earlier, mine]).then(() => {}) : mine).finally(
      () => {
        if (this.#settling.get(familyId) === settling) this.#settling.delete(familyId);
      },
    );
    this.#settling.set(familyId, settling);
  }

  /**
   * Resolves once every write this process started to end an answer's wait has landed:
   * before the connections close, or the marks of answers just given would stay.
   */
  async drain(): Promise<void> {
    while (this.#settling.size > 0) await Promise.all(this.#settling.values());
  }

  /**
   * Once this process's own write that ends an answer's wait for the family has landed;
   * nothing to wait for (no promise made) on the common path, where none is out.
   */
  #landed(familyId: string): Promise<void> | undefined {
    return this.#settling.get(familyId);
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
    if (families.length > 0) await this.#records.unlist(accountKind, subject, families);
  }

  /**
   * Ends an answer's wait for the replicas. Best effort, and not what the answer waits for:
   * lost, the record keeps the mark, and the token it replaced stays a retry until its
   * successor is used or the limit an earlier answer set has passed.
   */
  async #settleAnswer(
    familyId: string,
    outcome: AnswerOutcome | undefined,
    written?: VersionedFamilyRecord,
  ): Promise<void> {
    if (!outcome) return;
    await this.#settleWrite(
      familyId,
      (read) => {
        const next = settleAnswer(read?.record ?? null, outcome, this.#now());
        return next ? { answer: undefined, write: next } : { answer: undefined };
      },
      written,
      'amend',
    ).catch(() => undefined);
  }

  async #settle<T>(
    familyId: string,
    decide: (read: VersionedFamilyRecord | null) => Decision<T>,
  ): Promise<T> {
    await this.#landed(familyId);
    return (await this.#settleWrite(familyId, decide)).answer;
  }

  /**
   * Reads (or starts from `known`), decides, and writes with the version read, again while
   * another write wins; answers the decision, and the record as written, if it was.
   */
  async #settleWrite<T>(
    familyId: string,
    decide: (read: VersionedFamilyRecord | null) => Decision<T>,
    known?: VersionedFamilyRecord | null,
    how: 'write' | 'amend' = 'write',
  ): Promise<Settled<T>> {
    let read = known === undefined ? await this.#records.read(familyId) : known;
    let fresh = known === undefined;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const { answer, write, moot } = decide(read);
      if (!write) {
        if (fresh) return { answer };
      } else {
        const written = await this.#records[how](write, read);
        if (written) return { answer, written };
      }
      read = await this.#records.read(familyId);
      fresh = true;
      if (write && moot?.(read)) return { answer };
    }
    // Contention, or a read from a server the writes no longer go to (during a failover):
    // either passes, and the client's retry finds what won.
    throw Object.assign(new ServiceUnavailable('The session changed under this request; try again'), {
      cause: new Error(`Refresh-token family ${familyId} kept changing under ${MAX_ATTEMPTS} writes`),
    });
  }
}
