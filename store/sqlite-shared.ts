// The SharedStore over the embedded SQLite store: one replica, every call resolves at once from the
// synchronous tables. A write that fails (disk full) was logged by the store's guard and is reported
// here as a rejected promise, so callers see the same failure on either implementation.
import type { IssuedCertificate } from './ca-material.js';
import type { EnrollmentRow } from './enrollments.js';
import type { JoinTokenRow } from './join-tokens.js';
import type { DeniedSerial, RevocationOutcome, RevocationRow } from './revocations.js';
import type { NewEnrollment, NewJoinToken, SharedConfigLoad, SharedStore } from './shared-store.js';
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

  async recordIssued(cert: IssuedCertificate): Promise<void> {
    this.store.ca.recordIssued(cert);
  }

  async issuedBySerial(serial: string): Promise<IssuedCertificate | undefined> {
    return this.store.ca.issuedBySerial(serial);
  }

  async removeEnrollment(id: string): Promise<void> {
    this.store.enrollments.remove(id);
  }

  async countEnrollmentsByToken(tokenId: string): Promise<number> {
    return this.store.enrollments.countByToken(tokenId);
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

  async revokeIdentity(identity: string, now: Date, reason?: string): Promise<RevocationOutcome> {
    return this.store.revocations.revokeIdentity(identity, now, reason);
  }

  async revokeSerial(
    serial: string,
    now: Date,
    reason?: string,
  ): Promise<RevocationOutcome & { enrollmentId?: string }> {
    return this.store.revocations.revokeSerial(serial, now, reason);
  }

  async deniedSerials(now: Date): Promise<DeniedSerial[]> {
    return this.store.revocations.deniedSerials(now);
  }

  watchRevocations(onChange: () => void, pollMs = 1000): () => void {
    let revision = this.store.revocations.revision();
    const timer = setInterval(() => {
      let now: number;
      try {
        now = this.store.revocations.revision();
      } catch {
        return; // closed or unreadable: what was seen still applies
      }
      if (now !== revision) {
        revision = now;
        onChange();
      }
    }, pollMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  async revocationRevision(): Promise<number> {
    return this.store.revocations.revision();
  }

  async listRevocations(): Promise<RevocationRow[]> {
    return this.store.revocations.list();
  }

  async configLoads(format: string, limit: number): Promise<Map<string, SharedConfigLoad>> {
    return this.store.configLoads.rowsOf(format, limit);
  }

  async writeConfigLoads(rows: readonly SharedConfigLoad[], removed: readonly string[]): Promise<void> {
    if (!this.store.configLoads.writeRows(rows, removed))
      throw new Error('could not store config loads (see the log)');
  }

  async prune(now: Date, enrollmentsBefore: Date): Promise<{ enrollments: number; revocations: number }> {
    return {
      enrollments: this.store.enrollments.pruneStartedBefore(enrollmentsBefore),
      revocations: this.store.revocations.prune(now),
    };
  }

  async close(): Promise<void> {
    this.store.close();
  }
}
