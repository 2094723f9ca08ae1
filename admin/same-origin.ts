// Whether a request to the admin server comes from a page of the admin server itself. The mock API
// changes what every client is sent, so a web page the operator happens to have open must not be
// able to reach it: not by a cross-site form post (refused by Origin, and by the JSON content type
// the writes require, which makes a browser ask first), and not by DNS rebinding (a hostile name
// resolved to 127.0.0.1, refused by Host). The debug views and the dashboard are read the same way
// by a rebinding page, so reads get the Host check too (foreignHost); any HTTP server of Portolan's
// on a local port (the agent's status port) can call it with its own listen host.
import { isIP } from 'node:net';
import type { IncomingMessage } from 'node:http';

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
 * Refusal reason, or undefined when the request names the admin address (`adminHost`, as given to
 * --http-addr) in Host and, if it has an Origin, comes from that same origin.
 */
export function foreignRequest(req: IncomingMessage, adminHost: string): string | undefined {
  const foreign = foreignHost(req.headers.host, adminHost);
  if (foreign) return foreign;
  const hostHeader = req.headers.host ?? '';
  const origin = req.headers.origin;
  if (origin !== undefined && origin.toLowerCase() !== `http://${hostHeader.toLowerCase()}`)
    return `cross-origin request from ${JSON.stringify(origin)} refused`;
  return undefined;
}

/**
 * Refusal reason, or undefined when `hostHeader` (a request's Host) names a server listening on
 * `listenHost` (as given to its address flag): the DNS-rebinding check, for reads and writes alike.
 */
export function foreignHost(hostHeader: string | undefined, listenHost: string): string | undefined {
  const hostname = hostHeader === undefined ? undefined : hostnameOf(hostHeader);
  if (hostHeader === undefined || hostname === undefined)
    return 'a Host header naming the admin address is required';
  if (!namesAdmin(hostname, listenHost))
    return `Host ${JSON.stringify(hostHeader)} is not the admin address (${listenHost})`;
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
