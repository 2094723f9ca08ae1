// Which streams subscribe to which resource names, so a push visits only the streams a change can
// concern (those naming a changed resource, wildcard subscribers of a changed type, and those that
// asked for a name of a changed host that did not exist) instead of every open stream.
import type { ChangeSet } from './resource-cache.js';
import { hostOf, typeKey } from './resource-cache.js';
import type { ProxyKind } from '../proxy/proxy.js';

const NONE: ReadonlyMap<string, string> = new Map();

export class SubscriptionIndex<C> {
  private readonly byName = new Map<string, Map<string, Set<C>>>();
  private readonly wildcard = new Map<string, Set<C>>();
  /**
   * Each stream's names per type key. Whether it subscribes by wildcard is read from `wildcard`:
   * no record per stream and type beside the names, as every stream's entries outlive a scavenge.
   */
  private readonly streams = new Map<C, Map<string, ReadonlySet<string>>>();
  /** Names a stream asked for that did not exist when it was last answered: tk → name → host. */
  private readonly missing = new Map<C, Map<string, Map<string, string>>>();
  /** host → streams missing a name of it (with how many such names). */
  private readonly missingByHost = new Map<string, Map<C, number>>();

  /**
   * Records `conn`'s current subscription to (kind, type). `names` is copied, unless it is a set
   * its owner replaces rather than changes (`frozen`: the SotW state), which is then kept as is.
   */
  update(
    conn: C,
    kind: ProxyKind,
    typeUrl: string,
    names: Iterable<string>,
    wildcard: boolean,
    frozen = false,
  ): void {
    const tk = typeKey(kind, typeUrl);
    let types = this.streams.get(conn);
    if (!types) this.streams.set(conn, (types = new Map<string, ReadonlySet<string>>()));
    const before = types.get(tk);
    const next: ReadonlySet<string> = frozen && names instanceof Set ? names : new Set(names);
    types.set(tk, next);
    let byName = this.byName.get(tk);
    if (!byName) this.byName.set(tk, (byName = new Map<string, Set<C>>()));
    for (const n of before ?? []) {
      if (next.has(n)) continue;
      const set = byName.get(n);
      set?.delete(conn);
      if (set?.size === 0) byName.delete(n);
    }
    for (const n of next) {
      if (before?.has(n)) continue;
      let set = byName.get(n);
      if (!set) byName.set(n, (set = new Set()));
      set.add(conn);
    }
    // Proxyless clients never subscribe by wildcard: their type has no set to edit.
    let wild = this.wildcard.get(tk);
    if (wildcard) {
      if (!wild) this.wildcard.set(tk, (wild = new Set()));
      wild.add(conn);
    } else wild?.delete(conn);
  }

  /**
   * Records whether `name`, which `conn` asked for, was missing from its last answer. Names that
   * belong to no one hostname (hostOf) are not kept: only a config change can make those appear.
   */
  setMissing(conn: C, kind: ProxyKind, typeUrl: string, name: string, missing: boolean): void {
    const tk = typeKey(kind, typeUrl);
    let types = this.missing.get(conn);
    const names = types?.get(tk);
    if (!missing) {
      const host = names?.get(name);
      if (host === undefined) return;
      names?.delete(name);
      if (names?.size === 0) types?.delete(tk);
      if (types?.size === 0) this.missing.delete(conn);
      this.unindexMissing(conn, host);
      return;
    }
    if (names?.has(name)) return;
    const host = hostOf(kind, typeUrl, name);
    if (host === undefined) return;
    if (!types) this.missing.set(conn, (types = new Map<string, Map<string, string>>()));
    let forType = names;
    if (!forType) types.set(tk, (forType = new Map<string, string>()));
    forType.set(name, host);
    let byConn = this.missingByHost.get(host);
    if (!byConn) this.missingByHost.set(host, (byConn = new Map<C, number>()));
    byConn.set(conn, (byConn.get(conn) ?? 0) + 1);
  }

  /** `conn`'s missing names of (kind, type), with their hosts. */
  missingNames(conn: C, kind: ProxyKind, typeUrl: string): ReadonlyMap<string, string> {
    return this.missing.get(conn)?.get(typeKey(kind, typeUrl)) ?? NONE;
  }

  /** `conn`'s missing names of (kind, type) that belong to one of `hosts`. */
  missingUnder(conn: C, kind: ProxyKind, typeUrl: string, hosts: ReadonlySet<string>): string[] {
    const names = this.missing.get(conn)?.get(typeKey(kind, typeUrl));
    const out: string[] = [];
    for (const [name, host] of names ?? []) if (hosts.has(host)) out.push(name);
    return out;
  }

  remove(conn: C): void {
    for (const names of this.missing.get(conn)?.values() ?? [])
      for (const host of names.values()) this.unindexMissing(conn, host);
    this.missing.delete(conn);
    const types = this.streams.get(conn);
    if (!types) return;
    this.streams.delete(conn);
    for (const [tk, names] of types) {
      const byName = this.byName.get(tk);
      for (const n of names) {
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
    for (const host of changes.hosts ?? [])
      for (const c of this.missingByHost.get(host)?.keys() ?? []) out.add(c);
    for (const [tk, names] of changes.names) {
      for (const c of this.wildcard.get(tk) ?? []) out.add(c);
      const byName = this.byName.get(tk);
      if (!byName) continue;
      for (const n of names) for (const c of byName.get(n) ?? []) out.add(c);
    }
    return out;
  }

  private unindexMissing(conn: C, host: string): void {
    const byConn = this.missingByHost.get(host);
    const n = (byConn?.get(conn) ?? 0) - 1;
    if (n > 0) byConn?.set(conn, n);
    else byConn?.delete(conn);
    if (byConn?.size === 0) this.missingByHost.delete(host);
  }
}
