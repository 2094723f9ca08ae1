// Each load-generator connection dials from its own loopback address (127.x.y.z), as a fleet's
// proxies each dial from their own host, so the server's per-peer limits (--max-streams-per-peer,
// keyed by remote address) apply as in production. grpc-js has no channel option for the local
// address; a resolver of our own (`bench-from:///HOST:PORT@SOURCE`) hands it the server's address
// with `localAddress` set, which grpc-js passes on to net.connect as it opens the TCP connection.
import * as grpc from '@grpc/grpc-js';

const SCHEME = 'bench-from';

/** The grpc-js `Endpoint` shape a resolver reports (one address each). */
interface SourcedAddress {
  readonly host: string;
  readonly port: number;
  readonly localAddress: string;
}

/** What grpc-js calls a resolver's listener with (resolver.d.ts, ResolverListener). */
type Listener = (
  endpoints: ReturnType<typeof grpc.experimental.statusOrFromValue>,
  attributes: Record<string, unknown>,
  serviceConfig: null,
  resolutionNote: string,
) => boolean;

interface Target {
  readonly path: string;
}

class SourceAddressResolver {
  private readonly address: SourcedAddress;
  constructor(
    target: Target,
    private readonly listener: Listener,
  ) {
    const m = /^\/?(.+):(\d+)@(.+)$/.exec(target.path);
    if (!m?.[1] || !m[2] || !m[3]) throw new Error(`${SCHEME}: bad target ${target.path}`);
    this.address = { host: m[1], port: Number(m[2]), localAddress: m[3] };
  }
  updateResolution(): void {
    process.nextTick(() =>
      this.listener(grpc.experimental.statusOrFromValue([{ addresses: [this.address] }]), {}, null, ''),
    );
  }
  destroy(): void {}
  static getDefaultAuthority(target: Target): string {
    return target.path.replace(/^\//, '').split('@')[0] ?? '';
  }
}

let registered = false;

/** The grpc-js target that dials `address` (HOST:PORT) from the local address `source`. */
export function dialFrom(address: string, source: string): string {
  if (!registered) {
    grpc.experimental.registerResolver(
      SCHEME,
      SourceAddressResolver as unknown as Parameters<typeof grpc.experimental.registerResolver>[1],
    );
    registered = true;
  }
  return `${SCHEME}:///${address}@${source}`;
}

/**
 * The n-th loopback source address (n ≥ 0): 127.0.0.2 … 127.0.0.254, 127.0.1.1 … 127.0.1.254, …
 * (127.0.0.1 left to everything else; never .0 or .255 in the last octet).
 */
export function loopbackSource(n: number): string {
  const i = n + 1;
  const c = Math.floor(i / 254);
  return `127.${Math.floor(c / 256) % 256}.${c % 256}.${(i % 254) + 1}`;
}
