// The SharedStore over the embedded SQLite store: one replica, every call resolves at once from the
// synchronous tables. A write that fails (disk full) was logged by the store's guard and is reported
// here as a rejected promise, so callers see the same failure on either implementation.
import type { EnrollmentRow } from './enrollments.js';
import type { JoinTokenRow } from './join-tokens.js';
import type { RevocationOutcome, RevocationRow } from './revocations.js';
import type { NewEnrollment, NewJoinToken, SharedStore } from './shared-store.js';
import type { Store } from './store.js';

export class SqliteSharedStore implements SharedStore {
  readonly kind = 'sqlite' as const;

  constructor(private readonly store: Store) {}

  async schemaVersion(): Promise<number> {
    return this.store.schemaVersion();
  }

  async getMaterial(name: string): Promise<Buffer | undefined> {
    return this.store.ca.get(name);
  }

  async getOrCreateMaterial(name: string, create: () => Promise<Buffer>): Promise<Buffer> {
    const existing = this.store.ca.get(name);
    if (existing) return existing;
    // Another process may write between the read and the insert: putIfAbsent keeps the first.
    const stored = this.store.ca.putIfAbsent(name, await create());
    if (!stored) throw new Error(`could not store CA material ${name} (see the log)`);
    return stored;
  }

  async replaceMaterial(name: string, expected: Buffer, value: Buffer): Promise<boolean> {
    return this.store.ca.replace(name, expected, value);
  }

  async insertJoinToken(token: NewJoinToken): Promise<void> {
    if (!this.store.joinTokens.insert(token))
      throw new Error(`could not store join token ${token.id} (see the log)`);
  }

  async consumeJoinToken(hash: string, now: Date): Promise<string | undefined> {
    return this.store.joinTokens.consume(hash, now);
  }

  async refundJoinToken(hash: string): Promise<void> {
    this.store.joinTokens.refund(hash);
  }

  async findJoinToken(hash: string): Promise<JoinTokenRow | undefined> {
    return this.store.joinTokens.find(hash);
  }

  async listJoinTokens(): Promise<JoinTokenRow[]> {
    return this.store.joinTokens.list();
  }

  async startEnrollment(enrollment: NewEnrollment): Promise<void> {
    if (!this.store.enrollments.start(enrollment))
      throw new Error(`could not store enrollment ${enrollment.id} (see the log)`);
  }

  async getEnrollment(id: string): Promise<EnrollmentRow | undefined> {
    return this.store.enrollments.get(id);
  }

  async revokeJoinToken(
    tokenId: string,
    now: Date,
    reason?: string,
  ): Promise<RevocationOutcome & { found: boolean }> {
    return this.store.revocations.revokeToken(tokenId, now, reason);
  }

  async revocationRevision(): Promise<number> {
    return this.store.revocations.revision();
  }

  async listRevocations(): Promise<RevocationRow[]> {
    return this.store.revocations.list();
  }

  async close(): Promise<void> {
    this.store.close();
  }
}
