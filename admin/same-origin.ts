// Whether a request to the admin server comes from a page of the admin server itself. The mock API
// changes what every client is sent, so a web page the operator happens to have open must not be
// able to reach it: not by a cross-site form post (refused by Origin, and by the JSON content type
// the writes require, which makes a browser ask first), and not by DNS rebinding (a hostile name
// resolved to 127.0.0.1, refused by Host). The debug views and the dashboard are read the same way
// by a rebinding page, so reads get the Host check too (foreignHost); any HTTP server of Portolan's
// on a local port (the agent's status port) can call it with its own listen host.
import type { IncomingMessage } from 'node:http';
import { foreignHost } from '../model/host-header.js';

export { foreignHost, hostnameOf, isLoopbackHost } from '../model/host-header.js';

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
