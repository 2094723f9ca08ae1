// The names the agent's DNS proxy answers: the control plane's name table (NDS), with the short
// forms Istio's DNS proxy answers for Kubernetes-form hosts: NAME.NS.svc.DOMAIN is also NAME.NS,
// NAME.NS.svc and, in the agent's own namespace, NAME.
import { isIPv4, isIPv6 } from 'node:net';

export interface NameInfo {
  readonly ips?: readonly string[];
  readonly registry?: string;
  readonly shortname?: string;
  readonly namespace?: string;
  readonly alt_hosts?: readonly string[];
}

export interface Addresses {
  readonly v4: readonly string[];
  readonly v6: readonly string[];
  /** The hostname it belongs to. */
  readonly host: string;
}

/** Lower case, no trailing dot: how names are compared (DNS is case-insensitive). */
export function normalize(name: string): string {
  return name.toLowerCase().replace(/\.$/, '');
}

export class DnsNameTable {
  private names = new Map<string, Addresses>();
  private hosts = 0;

  constructor(private readonly namespace: string) {}

  get size(): number {
    return this.hosts;
  }

  /** Replaces the table with the control plane's. */
  update(table: Readonly<Record<string, NameInfo>>): void {
    const names = new Map<string, Addresses>();
    const exact = new Set<string>();
    const entries = Object.entries(table).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    for (const [host, info] of entries) {
      const ips = info.ips ?? [];
      const addresses: Addresses = {
        v4: ips.filter((i) => isIPv4(i)),
        v6: ips.filter((i) => isIPv6(i)),
        host,
      };
      const name = normalize(host);
      names.set(name, addresses);
      exact.add(name);
      const aliases = [...(info.alt_hosts ?? [])];
      if (info.shortname && info.namespace) {
        aliases.push(`${info.shortname}.${info.namespace}`, `${info.shortname}.${info.namespace}.svc`);
        if (info.namespace === this.namespace) aliases.push(info.shortname);
      }
      // A real hostname wins over another's short form; among short forms, the first in name order.
      for (const alias of aliases.map(normalize))
        if (!exact.has(alias) && !names.has(alias)) names.set(alias, addresses);
    }
    this.names = names;
    this.hosts = entries.length;
  }

  lookup(name: string): Addresses | undefined {
    return this.names.get(normalize(name));
  }
}
