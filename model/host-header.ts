// The DNS-rebinding check for Portolan's HTTP servers on local ports (the admin server, the
// agent's status port): a page on a hostile name resolved to 127.0.0.1 sends that name in Host, so
// a server answers only Hosts that name its own listen address (or loopback, or an IP literal).
import { isIP } from 'node:net';

/** The hostname in a Host header (`[::1]:15014` → `::1`), lower-cased; undefined if malformed. */
export function hostnameOf(hostHeader: string): string | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+))(?::\d{1,5})?$/.exec(hostHeader.trim());
  const name = m?.[1] ?? m?.[2];
  return name?.toLowerCase();
}

export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  if (h === 'localhost' || h === '::1') return true;
  return isIP(h) === 4 && h.startsWith('127.');
}

function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '[::]' || host === '';
}

/**
 * Refusal reason, or undefined when `hostHeader` (a request's Host) names a server listening on
 * `listenHost` (as given to its address flag): the DNS-rebinding check, for reads and writes alike.
 */
export function foreignHost(
  hostHeader: string | undefined,
  listenHost: string,
  what = 'the admin address',
): string | undefined {
  const hostname = hostHeader === undefined ? undefined : hostnameOf(hostHeader);
  if (hostHeader === undefined || hostname === undefined) return `a Host header naming ${what} is required`;
  if (!namesAdmin(hostname, listenHost))
    return `Host ${JSON.stringify(hostHeader)} is not ${what} (${listenHost})`;
  return undefined;
}

/**
 * A Host hostname that reaches the admin server under a name it answers to: its own address;
 * localhost and the loopback addresses when it listens on loopback; any IP literal (never a name,
 * which is what DNS rebinding needs) when it listens on every interface.
 */
function namesAdmin(hostname: string, adminHost: string): boolean {
  const admin = adminHost.toLowerCase().replace(/^\[|\]$/g, '');
  if (hostname === admin) return true;
  if (isLoopbackHost(admin)) return isLoopbackHost(hostname);
  if (isWildcard(admin)) return hostname === 'localhost' || isIP(hostname) !== 0;
  return false;
}
