// Which streams subscribe to which resource names, so a push visits only the streams a change can
// concern (those naming a changed resource, and wildcard subscribers of a changed type) instead of
// every open stream.
import type { ChangeSet } from './resource-cache.js';
import { typeKey } from './resource-cache.js';
import type { ProxyKind } from '../proxy/proxy.js';

interface Indexed {
  readonly names: ReadonlySet<string>;
  readonly wildcard: boolean;
}

export class SubscriptionIndex<C> {
  private readonly byName = new Map<string, Map<string, Set<C>>>();
  private readonly wildcard = new Map<string, Set<C>>();
  private readonly streams = new Map<C, Map<string, Indexed>>();

  /** Records `conn`'s current subscription to (kind, type); `names` is copied. */
  update(conn: C, kind: ProxyKind, typeUrl: string, names: Iterable<string>, wildcard: boolean): void {
    const tk = typeKey(kind, typeUrl);
    let types = this.streams.get(conn);
    if (!types) this.streams.set(conn, (types = new Map<string, Indexed>()));
    const before = types.get(tk);
    const next: Indexed = { names: new Set(names), wildcard };
    types.set(tk, next);
    let byName = this.byName.get(tk);
    if (!byName) this.byName.set(tk, (byName = new Map<string, Set<C>>()));
    for (const n of before?.names ?? []) {
      if (next.names.has(n)) continue;
      const set = byName.get(n);
      set?.delete(conn);
      if (set?.size === 0) byName.delete(n);
    }
    for (const n of next.names) {
      if (before?.names.has(n)) continue;
      let set = byName.get(n);
      if (!set) byName.set(n, (set = new Set()));
      set.add(conn);
    }
    let wild = this.wildcard.get(tk);
    if (!wild) this.wildcard.set(tk, (wild = new Set()));
    if (wildcard) wild.add(conn);
    else wild.delete(conn);
  }

  remove(conn: C): void {
    const types = this.streams.get(conn);
    if (!types) return;
    this.streams.delete(conn);
    for (const [tk, indexed] of types) {
      const byName = this.byName.get(tk);
      for (const n of indexed.names) {
        const set = byName?.get(n);
        set?.delete(conn);
        if (set?.size === 0) byName?.delete(n);
      }
      this.wildcard.get(tk)?.delete(conn);
    }
  }

  /** The streams `changes` may concern (a superset: each stream still checks precisely). */
  affected(changes: ChangeSet): Set<C> {
    const out = new Set<C>();
    for (const [tk, names] of changes.names) {
      for (const c of this.wildcard.get(tk) ?? []) out.add(c);
      const byName = this.byName.get(tk);
      if (!byName) continue;
      for (const n of names) for (const c of byName.get(n) ?? []) out.add(c);
    }
    return out;
  }
}
