// The deny list as a running CA holds it: the serials it refuses, reloaded whenever the store's
// revision moves (`portolan token revoke` and `portolan cert revoke` write from another process; the
// secure port polls every second). Checked in memory at each CreateCertificate and at each secure
// ADS stream's first request; when it changes, the secure port closes the open streams that present
// a refused certificate.
import { normalizeSerial, type RevocationTable } from '../store/revocations.js';

export class RevocationList {
  private revision = -1;
  /** Refused serials and why. */
  private serials: ReadonlyMap<string, string> = new Map();

  constructor(
    private readonly table: RevocationTable,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Reloads the list if the store's revision moved; returns whether it did. */
  refresh(): boolean {
    const revision = this.table.revision();
    if (revision === this.revision) return false;
    this.serials = new Map(this.table.deniedSerials(this.now()).map((d) => [d.serial, d.reason]));
    this.revision = revision;
    return true;
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
