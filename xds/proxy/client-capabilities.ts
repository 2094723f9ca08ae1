// One table of what each kind of client can take and the defects it is known for, keyed by the node's
// user_agent_name and user_agent_version (gRPC sends both: C-core "gRPC C-core linux Python" /
// "C-core 29.0.0 Python 1.51.1", grpc-js "gRPC Node" / its version). The generators render from the
// profile a proxy gets here (xds/generators/grpc/cluster.ts: which lb_policy), /debug/adsz shows
// each proxy's applicable rules, and /debug/configz lists, as limitations, the config some clients
// are given differently (xds/traffic/client-limitations.ts). Every rule the renderers follow because
// of one client's strictness is here, including those applied to every gRPC client.
import type { Proxy, ProxyKind } from './proxy.js';

/** The Cluster lb_policy values a DestinationRule can ask for. */
export type LbPolicy =
  'ROUND_ROBIN' | 'LEAST_REQUEST' | 'RANDOM' | 'RING_HASH' | 'MAGLEV' | 'CLUSTER_PROVIDED';

export interface ClientRule {
  /** Stable name (shown in /debug/adsz). */
  readonly id: string;
  /** Which clients, for people. */
  readonly clients: string;
  readonly matches: (client: ClientId) => boolean;
  /** Policies these clients are not sent, and what they get instead. */
  readonly lbPolicies?: { readonly withheld: readonly LbPolicy[]; readonly instead: LbPolicy };
  /** What the renderers send these clients because of the rule. */
  readonly rendering: string;
  readonly reason: string;
  readonly reference: string;
  /**
   * Applies to some versions of a client only: the proxies it matches get a rendering (and cache
   * entries) of their own. Rules for every gRPC client are part of the common rendering.
   */
  readonly versioned: boolean;
}

export interface ClientId {
  readonly kind: ProxyKind;
  readonly userAgent: string;
  readonly userAgentVersion: string;
}

const isGrpc = (c: ClientId): boolean => c.kind === 'grpc';

/** The C-core version in a C-core user agent ("C-core 29.0.0 Python 1.51.1"), as the gRPC minor release. */
export function ccoreGrpcMinor(c: ClientId): number | undefined {
  if (!/^gRPC C-core\b/.test(c.userAgent)) return undefined;
  // C-core's own version: 1.50 is 28.x, 1.51 is 29.x, 1.52 is 30.x (major = minor - 22).
  const core = /\bC-core (\d+)\.\d+/.exec(c.userAgentVersion);
  if (core) return Number(core[1]) + 22;
  const release = /^1\.(\d+)\./.exec(c.userAgentVersion);
  return release ? Number(release[1]) : undefined;
}

export const CLIENT_RULES: readonly ClientRule[] = [
  {
    id: 'grpc-lb-policies',
    clients: 'every proxyless gRPC client',
    matches: isGrpc,
    lbPolicies: {
      withheld: ['LEAST_REQUEST', 'RANDOM', 'MAGLEV', 'CLUSTER_PROVIDED'],
      instead: 'ROUND_ROBIN',
    },
    rendering: 'Cluster lb_policy ROUND_ROBIN, or RING_HASH for consistentHash; nothing else',
    reason:
      'gRPC C-core 1.51 NACKs any other lb_policy ("LB policy is not supported"); @grpc/grpc-js-xds 1.14 has no least-request or random policy',
    reference: 'test/clients/README.md; docs/traffic.md (load balancing)',
    versioned: false,
  },
  {
    id: 'ccore-ring-hash-crash',
    clients: 'gRPC C-core 1.50 and 1.51 (C-core 28.x, 29.x: Debian bookworm’s python3-grpcio and libgrpc++)',
    matches: (c) => {
      const minor = ccoreGrpcMinor(c);
      return minor !== undefined && minor >= 50 && minor <= 51;
    },
    lbPolicies: { withheld: ['RING_HASH'], instead: 'ROUND_ROBIN' },
    rendering:
      'ROUND_ROBIN where a DestinationRule asks for consistentHash: no session affinity (the route’s hash policy is ignored)',
    reason: 'the ring-hash picker crashes the process (segfault) as soon as it receives a RING_HASH cluster',
    reference: 'grpc/grpc#31766, fixed in 1.52 (January 2023)',
    versioned: true,
  },
  {
    id: 'ccore-locality-weights',
    clients: 'every proxyless gRPC client',
    matches: isGrpc,
    rendering:
      'every EDS locality carries load_balancing_weight (the sum of its endpoints’ weights), all at priority 0',
    reason:
      'gRPC C-core 1.51 silently drops a locality without a weight (calls fail when none is left) and NACKs localities that start above priority 0',
    reference: 'test/clients/README.md; xds/generators/endpoints.ts',
    versioned: false,
  },
  {
    id: 'ccore-required-fields',
    clients: 'every proxyless gRPC client',
    matches: isGrpc,
    rendering:
      'listeners carry an HttpConnectionManager ending in the router filter with its typed_config; clusters always have a type and an ADS eds_config',
    reason:
      'gRPC C-core 1.51 NACKs an HCM without filters, a router without typed_config, a Cluster without type and an EDS cluster without eds_config',
    reference: 'test/clients/README.md; xds/generators/grpc/listener.ts, cluster.ts',
    versioned: false,
  },
];

/** What one proxy may be sent, by the rules that match it. */
export interface ClientProfile {
  readonly rules: readonly ClientRule[];
  /** The policy rendered when `wanted` is asked for. */
  lbPolicy(wanted: LbPolicy): LbPolicy;
  /** '' for the common rendering; otherwise names the versioned rules (part of a generator's viewKey). */
  readonly key: string;
}

const profiles = new WeakMap<Proxy, ClientProfile>();

/** The profile of `proxy` (computed once per proxy). */
export function clientProfile(proxy: Proxy): ClientProfile {
  let p = profiles.get(proxy);
  if (!p) profiles.set(proxy, (p = profileFor(proxy)));
  return p;
}

export function profileFor(client: ClientId, rules: readonly ClientRule[] = CLIENT_RULES): ClientProfile {
  const matching = rules.filter((r) => r.matches(client));
  return {
    rules: matching,
    lbPolicy(wanted) {
      let policy = wanted;
      // A replacement may itself be withheld by another rule (RING_HASH → ROUND_ROBIN is never).
      for (let i = 0; i < matching.length; i++)
        for (const r of matching) if (r.lbPolicies?.withheld.includes(policy)) policy = r.lbPolicies.instead;
      return policy;
    },
    key: matching
      .filter((r) => r.versioned)
      .map((r) => r.id)
      .join(','),
  };
}
