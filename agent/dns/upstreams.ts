// Where the DNS proxy forwards names outside the mesh: `--dns-upstream HOST[:PORT][,…]`, else the
// nameservers of /etc/resolv.conf (the VM's own resolvers), never the proxy itself.
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';

export interface Upstream {
  readonly host: string;
  readonly port: number;
}

export class UpstreamError extends Error {}

/** `HOST[:PORT]` items, IPv6 in brackets when it has a port: `10.0.0.2`, `10.0.0.2:5353`, `[::1]:53`. */
export function parseUpstreams(text: string): Upstream[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((item) => {
      const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(item);
      const plain = /^([^:]+)(?::(\d+))?$/.exec(item);
      const host = bracket?.[1] ?? (isIP(item) === 6 ? item : plain?.[1]);
      const port = Number((bracket ? bracket[2] : isIP(item) === 6 ? undefined : plain?.[2]) ?? 53);
      if (!host || isIP(host) === 0 || !Number.isInteger(port) || port < 1 || port > 65535)
        throw new UpstreamError(`"${item}" is not IP[:PORT] (IPv6 as [IP]:PORT)`);
      return { host, port };
    });
}

/** The `nameserver` lines of a resolv.conf. */
export function resolvConfServers(text: string): Upstream[] {
  const out: Upstream[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*nameserver\s+(\S+)/.exec(line);
    const host = m?.[1]?.replace(/%.*$/, ''); // a zone index (fe80::1%eth0) is not for us
    if (host && isIP(host) !== 0) out.push({ host, port: 53 });
  }
  return out;
}

export function systemUpstreams(path = '/etc/resolv.conf'): Upstream[] {
  try {
    return resolvConfServers(readFileSync(path, 'utf8'));
  } catch {
    return [];
  }
}
