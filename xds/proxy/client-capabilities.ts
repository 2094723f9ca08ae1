// One table of what each kind of client can take and the defects it is known for, keyed by the node's
// user_agent_name and user_agent_version (gRPC sends both: C-core "gRPC C-core linux Python" /
// "C-core 29.0.0 Python 1.51.1", grpc-js "gRPC Node" / its version). The generators render from the
// profile a proxy gets here (xds/generators/grpc/cluster.ts: which lb_policy), /debug/adsz shows
// each proxy's applicable rules, and /debug/configz lists, as limitations, the config some clients
// are given differently (xds/traffic/client-limitations.ts). Every rule the renderers follow because
// of one client's strictness is here, including those applied to every gRPC client.
//
// A rule with `rejects` names resources a client would NACK (or crash on) that the renderers cannot
// simply render around: such a resource is not sent to that client, which keeps its last good
// version (xds/validate/acceptance.ts asks; xds/validate/withholding-generator.ts withholds;
// /debug/configz lists what was withheld). Each check runs on the decoded resource once per build
// of a cache share, never per stream.
import type { ClusterLoadAssignment__Output } from '../generated/envoy/config/endpoint/v3/ClusterLoadAssignment.js';
import { messageType } from '../proto/protos.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE, TYPE_URL_PREFIX } from '../proto/type-urls.js';
import { validateMessage, type Violation } from '../validate/pgv-validator.js';
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
  /** Resources these clients would reject: not sent to them (they keep their last good one). */
  readonly rejects?: readonly ResourceCheck[];
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

/** One check of a rule on the resources of one type. */
export interface ResourceCheck {
  readonly typeUrl: string;
  /**
   * undefined when the client takes `message` (the resource as decoded from what would be sent:
   * proto field names, enums as numbers, wrappers as `{ value }`); else what it would say.
   */
  readonly check: (message: object) => string | undefined;
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
      'every EDS locality carries load_balancing_weight (the sum of its endpoints’ weights, or its `distribute` share); priorities start at 0 with no gaps (all at 0 without a DestinationRule’s locality failover)',
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
  {
    id: 'grpc-eds-duplicate-address',
    clients: 'every proxyless gRPC client (checked: @grpc/grpc-js-xds 1.14, gRPC C-core 1.51)',
    matches: isGrpc,
    rejects: [{ typeUrl: ENDPOINT, check: duplicateAddress }],
    rendering:
      'a ClusterLoadAssignment listing one address:port twice (two WorkloadEntries or registry instances at the same address, e.g. in two localities) is withheld: the client keeps its last good one',
    reason:
      'both NACK the whole assignment: grpc-js-xds "address is a duplicate of another address in the same endpoint", C-core "duplicate endpoint address"; Istio accepts two WorkloadEntries with one address',
    reference:
      'test/clients/README.md; @grpc/grpc-js-xds 1.14 build/src/xds-resource-type/endpoint-resource-type.js validateAddress',
    versioned: false,
  },
  {
    id: 'grpc-eds-priority-weight-sum',
    clients: 'every proxyless gRPC client (checked: @grpc/grpc-js-xds 1.14, gRPC C-core 1.51)',
    matches: isGrpc,
    rejects: [{ typeUrl: ENDPOINT, check: priorityWeightOverflow }],
    rendering:
      'a ClusterLoadAssignment whose locality weights at one priority add up to more than 4294967295 (WorkloadEntry weights are uint32 each) is withheld: the client keeps its last good one',
    reason:
      'both NACK it: grpc-js-xds "priority 0 has total weight greater than UINT32_MAX", C-core "sum of locality weights for priority 0 exceeds uint32 max"',
    reference:
      'test/clients/README.md; @grpc/grpc-js-xds 1.14 build/src/xds-resource-type/endpoint-resource-type.js validateResource',
    versioned: false,
  },
  {
    id: 'envoy-validate-rules',
    clients: 'Envoy',
    matches: (c) => c.kind === 'envoy',
    // The config-derived types only: EDS is endpoint data, rebuilt on every endpoint change, and its
    // generator's shape is fixed (docs/envoy.md has the figures).
    rejects: [LISTENER, ROUTE, CLUSTER].map((typeUrl) => ({ typeUrl, check: validateRules(typeUrl) })),
    rendering:
      'a Listener, RouteConfiguration or Cluster that breaks a (validate.rules) annotation is withheld',
    reason: 'Envoy NACKs a resource that breaks the protoc-gen-validate rules of its own protos',
    reference: 'xds/validate/pgv-validator.ts (the annotations in envoy-api’s .proto files)',
    versioned: false,
  },
];

/** How many violations a message names (a resource can break many rules at once). */
const MAX_VIOLATIONS_NAMED = 3;

function validateRules(typeUrl: string): (message: object) => string | undefined {
  const typeName = typeUrl.slice(TYPE_URL_PREFIX.length);
  return (message) => {
    const violations: Violation[] = validateMessage(messageType(typeName), message as never, '');
    if (violations.length === 0) return undefined;
    const named = violations.slice(0, MAX_VIOLATIONS_NAMED).map((v) => `${v.path}: ${v.message}`);
    const more = violations.length > named.length ? ` (and ${violations.length - named.length} more)` : '';
    return `${named.join('; ')}${more}`;
  };
}

/** The first address:port that appears twice in the assignment (any locality, any priority). */
function duplicateAddress(cla: ClusterLoadAssignment__Output): string | undefined {
  const seen = new Set<string>();
  for (const [i, group] of (cla.endpoints ?? []).entries())
    for (const [j, lb] of (group.lb_endpoints ?? []).entries()) {
      const a = lb.endpoint?.address?.socket_address;
      if (!a) continue;
      const key = `${a.address ?? ''}:${a.port_value ?? 0}`;
      if (seen.has(key)) return `endpoints[${i}].lb_endpoints[${j}]: duplicate endpoint address ${key}`;
      seen.add(key);
    }
  return undefined;
}

const UINT32_MAX = 0xffff_ffff;

function priorityWeightOverflow(cla: ClusterLoadAssignment__Output): string | undefined {
  const sums = new Map<number, number>();
  for (const group of cla.endpoints ?? []) {
    const p = group.priority ?? 0;
    sums.set(p, (sums.get(p) ?? 0) + (group.load_balancing_weight?.value ?? 0));
  }
  for (const [p, sum] of sums)
    if (sum > UINT32_MAX)
      return `the locality weights of priority ${p} add up to ${sum}, more than ${UINT32_MAX}`;
  return undefined;
}

/** What one proxy may be sent, by the rules that match it. */
export interface ClientProfile {
  readonly rules: readonly ClientRule[];
  /** The policy rendered when `wanted` is asked for. */
  lbPolicy(wanted: LbPolicy): LbPolicy;
  /** '' for the common rendering; otherwise names the versioned rules (part of a generator's viewKey). */
  readonly key: string;
  /** The checks of this type these clients' resources must pass, with their rules. */
  checks(typeUrl: string): readonly RuleCheck[];
  /**
   * '' when every client of this kind is checked alike for this type; otherwise names the versioned
   * rules that check it (a withholding generator adds it to its viewKey, so a share's resources are
   * checked for one set of rules).
   */
  checkKey(typeUrl: string): string;
}

export interface RuleCheck {
  readonly rule: ClientRule;
  readonly check: ResourceCheck['check'];
}

const profiles = new WeakMap<Proxy, ClientProfile>();
const NO_CHECKS: readonly RuleCheck[] = [];

/**
 * Profiles by client (kind, user agent and its version): every stream has a Proxy of its own, but a
 * fleet runs a handful of client builds, so a connect storm matches the rules once per build, not
 * once per stream. Bounded: past MAX_CLIENTS builds the oldest goes first.
 */
const byClient = new Map<string, ClientProfile>();
const MAX_CLIENTS = 1000;

/** The profile of `proxy` (computed once per client build, looked up once per proxy). */
export function clientProfile(proxy: Proxy): ClientProfile {
  let p = profiles.get(proxy);
  if (p) return p;
  // The agent's length keeps two clients apart whatever their strings hold.
  const id = `${proxy.kind}\0${proxy.userAgent.length}\0${proxy.userAgent}\0${proxy.userAgentVersion}`;
  p = byClient.get(id);
  if (!p) {
    byClient.set(id, (p = profileFor(proxy)));
    if (byClient.size > MAX_CLIENTS) {
      const oldest = byClient.keys().next();
      if (!oldest.done) byClient.delete(oldest.value);
    }
  }
  profiles.set(proxy, p);
  return p;
}

export function profileFor(client: ClientId, rules: readonly ClientRule[] = CLIENT_RULES): ClientProfile {
  const matching = rules.filter((r) => r.matches(client));
  const byType = new Map<string, RuleCheck[]>();
  for (const rule of matching)
    for (const c of rule.rejects ?? []) {
      let list = byType.get(c.typeUrl);
      if (!list) byType.set(c.typeUrl, (list = []));
      list.push({ rule, check: c.check });
    }
  const checkKeys = new Map<string, string>();
  for (const [typeUrl, list] of byType)
    checkKeys.set(
      typeUrl,
      list
        .filter((c) => c.rule.versioned)
        .map((c) => c.rule.id)
        .join(','),
    );
  return {
    checks: (typeUrl) => byType.get(typeUrl) ?? NO_CHECKS,
    checkKey: (typeUrl) => checkKeys.get(typeUrl) ?? '',
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
