// The pushes withheld because a client would reject them (xds/validate/withholding-generator.ts),
// for /debug/configz: per cache share (kind, type, view key) and resource name, the rule, what the
// client would say, since when and how many rebuilds were withheld. An entry goes when a later
// build of it is accepted or the resource is no longer built; the registry is bounded (the oldest
// entry goes first), and so is each message.
import type { ProxyKind } from '../proxy/proxy.js';

export interface WithheldPush {
  readonly kind: ProxyKind;
  readonly typeUrl: string;
  /** The share's view key (what the generator keyed the build by). */
  readonly viewKey: string;
  readonly name: string;
  /** The client of the proxy the resource was built for (the share may hold others the rule matches). */
  readonly userAgent: string;
  readonly userAgentVersion: string;
  readonly rule: string;
  readonly reason: string;
  /** The version (content hash) of the resource withheld last. */
  readonly version: string;
  /** Whether the client was left a last good version (false: the resource is absent for it). */
  readonly lastGood: boolean;
  /** When it was first withheld (ms since the epoch), and last. */
  readonly since: number;
  readonly at: number;
  /** Builds withheld since `since`. */
  readonly count: number;
}

export const MAX_WITHHELD = 1000;
const MAX_REASON_CHARS = 1000;

export class WithheldPushes {
  private readonly entries = new Map<string, WithheldPush>();

  constructor(
    private readonly max = MAX_WITHHELD,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** A build was withheld. Returns true when it is news (a new entry, or another version or rule). */
  record(push: Omit<WithheldPush, 'since' | 'at' | 'count'>): boolean {
    const key = keyOf(push.kind, push.typeUrl, push.viewKey, push.name);
    const known = this.entries.get(key);
    const at = this.now();
    const reason =
      push.reason.length > MAX_REASON_CHARS ? `${push.reason.slice(0, MAX_REASON_CHARS)}…` : push.reason;
    this.entries.delete(key); // re-inserted last: the oldest entry is the first in the map
    this.entries.set(key, { ...push, reason, since: known?.since ?? at, at, count: (known?.count ?? 0) + 1 });
    while (this.entries.size > this.max) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      this.entries.delete(oldest.value);
    }
    return !known || known.version !== push.version || known.rule !== push.rule;
  }

  /** The resource was built and accepted, or is built no more: nothing is withheld for it now. */
  clear(kind: ProxyKind, typeUrl: string, viewKey: string, name: string): void {
    if (this.entries.size > 0) this.entries.delete(keyOf(kind, typeUrl, viewKey, name));
  }

  list(): readonly WithheldPush[] {
    return [...this.entries.values()];
  }
}

function keyOf(kind: ProxyKind, typeUrl: string, viewKey: string, name: string): string {
  return `${kind}\0${typeUrl}\0${viewKey}\0${name}`;
}
