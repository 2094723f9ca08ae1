// What the CA and the secure port need from the shared store (store/shared-store.ts): join tokens,
// enrollments, the issuance log and the deny list. With several replicas it is PostgreSQL; a call
// that cannot reach it fails with StoreUnavailable, which the CA answers with gRPC UNAVAILABLE.
// StoreHealth keeps a dead database from costing every request a connection timeout: after a
// failure, calls fail at once for `retryMs`, then one is let through to probe.
import { isStoreUnavailable, type SharedStore } from '../store/shared-store.js';

export type CaStore = Pick<
  SharedStore,
  | 'kind'
  | 'insertJoinToken'
  | 'consumeJoinToken'
  | 'refundJoinToken'
  | 'findJoinToken'
  | 'recordIssued'
  | 'issuedBySerial'
  | 'startEnrollment'
  | 'getEnrollment'
  | 'removeEnrollment'
  | 'revocationRevision'
  | 'deniedSerials'
  | 'watchRevocations'
  | 'prune'
>;

/** The shared store is unreachable: what needs it is refused (UNAVAILABLE), what this replica cached goes on. */
export class StoreUnavailable extends Error {}

export interface StoreState {
  readonly kind: 'sqlite' | 'postgres';
  readonly state: 'up' | 'unreachable';
  /** Since when it has been in that state (ISO). */
  readonly since: string;
  readonly lastError?: string;
}

export class StoreHealth {
  private down: { at: number; since: string; error: string } | undefined;
  private upSince: string;

  constructor(
    readonly kind: 'sqlite' | 'postgres',
    private readonly retryMs = 2000,
    private readonly onChange: (state: StoreState) => void = () => undefined,
    /** Epoch milliseconds (tests pass a manual clock's). */
    private readonly now: () => number = Date.now,
  ) {
    this.upSince = this.isoNow();
  }

  /** Runs one store call; an unreachable store is StoreUnavailable (at once while known down). */
  async run<T>(what: string, fn: () => Promise<T>): Promise<T> {
    const down = this.down;
    if (down && this.now() - down.at < this.retryMs)
      throw new StoreUnavailable(unavailableMessage(this.kind, what, down.error));
    try {
      const result = await fn();
      this.markUp();
      return result;
    } catch (err) {
      if (!isStoreUnavailable(err)) throw err;
      this.markDown(err);
      throw new StoreUnavailable(unavailableMessage(this.kind, what, (err as Error).message));
    }
  }

  markUp(): void {
    if (!this.down) return;
    this.down = undefined;
    this.upSince = this.isoNow();
    this.onChange(this.state());
  }

  markDown(err: unknown): void {
    const error = err instanceof Error ? err.message : String(err);
    const was = this.down;
    this.down = { at: this.now(), since: was?.since ?? this.isoNow(), error };
    if (!was) this.onChange(this.state());
  }

  state(): StoreState {
    return this.down
      ? { kind: this.kind, state: 'unreachable', since: this.down.since, lastError: this.down.error }
      : { kind: this.kind, state: 'up', since: this.upSince };
  }

  private isoNow(): string {
    return new Date(this.now()).toISOString();
  }
}

function unavailableMessage(kind: string, what: string, error: string): string {
  return (
    `the CA's shared store (${kind}) is unreachable (${error}): ${what} is refused until it returns; ` +
    'workloads already enrolled keep renewing'
  );
}

/** The store with every call through `health` (watchRevocations is the watcher's own business). */
export function guardedCaStore(store: CaStore, health: StoreHealth): CaStore {
  return {
    kind: store.kind,
    insertJoinToken: (t) => health.run('creating a join token', () => store.insertJoinToken(t)),
    consumeJoinToken: (h, now) => health.run('a join token', () => store.consumeJoinToken(h, now)),
    refundJoinToken: (h) => health.run('a join token refund', () => store.refundJoinToken(h)),
    findJoinToken: (h) => health.run('a join token', () => store.findJoinToken(h)),
    recordIssued: (c) => health.run('recording a certificate', () => store.recordIssued(c)),
    issuedBySerial: (s) => health.run('looking up a certificate', () => store.issuedBySerial(s)),
    startEnrollment: (e) => health.run('a new enrollment', () => store.startEnrollment(e)),
    getEnrollment: (id) => health.run('reading an enrollment', () => store.getEnrollment(id)),
    removeEnrollment: (id) => health.run('removing an enrollment', () => store.removeEnrollment(id)),
    revocationRevision: () => health.run('the deny list', () => store.revocationRevision()),
    deniedSerials: (now) => health.run('the deny list', () => store.deniedSerials(now)),
    watchRevocations: (onChange, pollMs) => store.watchRevocations(onChange, pollMs),
    prune: (now, before) => health.run('pruning', () => store.prune(now, before)),
  };
}
