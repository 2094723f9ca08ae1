// The deny list as a running CA holds it: the serials it refuses, reloaded whenever the store's
// revision moves (`portolan token revoke` and `portolan cert revoke` write from another process or
// another replica; the secure port polls, and on PostgreSQL also listens for a notification).
// Checked in memory at each CreateCertificate and at each secure ADS stream's first request; when it
// changes, the secure port closes the open streams that present a refused certificate. While the
// store is unreachable, the list as last read still applies.
import { normalizeSerial } from '../store/revocations.js';
import type { CaStore } from './ca-store.js';

export class RevocationList {
  private revision = -1;
  /** Refused serials and why. */
  private serials: ReadonlyMap<string, string> = new Map();
  private loading: Promise<boolean> | undefined;

  constructor(
    private readonly store: Pick<CaStore, 'revocationRevision' | 'deniedSerials'>,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Reloads the list if the store's revision moved; returns whether it did (false when unreachable). */
  refresh(): Promise<boolean> {
    // One reload at a time: a burst of requests shares it.
    this.loading ??= this.load().finally(() => (this.loading = undefined));
    return this.loading;
  }

  private async load(): Promise<boolean> {
    try {
      const revision = await this.store.revocationRevision();
      if (revision === this.revision) return false;
      const denied = await this.store.deniedSerials(this.now());
      this.serials = new Map(denied.map((d) => [d.serial, d.reason]));
      this.revision = revision;
      return true;
    } catch {
      return false; // unreachable: what was seen still applies
    }
  }

  isRevoked(serial: string): boolean {
    return this.serials.has(normalizeSerial(serial));
  }

  /** Why a serial is refused, or undefined when it is not. */
  reason(serial: string): string | undefined {
    return this.serials.get(normalizeSerial(serial));
  }

  get size(): number {
    return this.serials.size;
  }
}
