// EDS, shared by every kind of proxy: endpoints grouped by locality, each locality weighted by the sum
// of its endpoints' weights (gRPC ignores a locality without a weight, gRFC A27). A subset cluster
// (`outbound|PORT|SUBSET|HOST`) gets the endpoints matching the subset's labels in the
// DestinationRule the proxy's namespace sees. The rule's locality load balancing
// (xds/traffic/locality-lb.ts) makes the assignment depend on where the proxy is: priorities by
// closeness, or `distribute` weights.
import type { ClusterLoadAssignment } from '../generated/envoy/config/endpoint/v3/ClusterLoadAssignment.js';
import type { LocalityLbEndpoints } from '../generated/envoy/config/endpoint/v3/LocalityLbEndpoints.js';
import type { HealthStatus } from '../generated/envoy/config/core/v3/HealthStatus.js';
import { localityKey, type Health } from '../../model/endpoint.js';
import type { GenerateContext, ServingView } from './generator.js';
import { parseClusterName } from './names.js';
import { memoSlot } from './view-memo.js';
import type { Proxy } from '../proxy/proxy.js';
import { encodeWireForm, type EncodedResource } from '../proto/resource.js';
import { ENDPOINT } from '../proto/type-urls.js';
import { findSubset, subsetEndpoints } from '../traffic/subsets.js';
import { clusterPolicy } from '../traffic/traffic-policy.js';
import {
  localityLbPlan,
  localityReads,
  meshPlaceKey,
  placeKey,
  priorityGroups,
  proxyPlace,
  type LocalityLbPlan,
  type LocalityReads,
  type PriorityGroup,
  type ProxyPlace,
} from '../traffic/locality-lb.js';
import { proxyLabels } from '../traffic/route-context.js';

/**
 * A load assignment depends on the DestinationRules the proxy's namespace sees (subsets, locality
 * settings) and on where the proxy is — but only as far as the mesh's locality rules look
 * (localityReads): its locality when some rule prioritizes or distributes by it, the labels some
 * `failoverPriority` names, nothing of it without such rules, not even the namespace without any
 * DestinationRule. Proxies of one such view share the encoded assignments, so a mesh without
 * locality rules has one EDS view, however many localities its clients are in. The key changes
 * with the config (the server moves streams to their new view then, ResourceCache). Without a
 * view: everything a rule could read.
 */
export function loadAssignmentViewKey(proxy: Proxy, view?: ServingView): string {
  if (!view)
    return JSON.stringify([proxy.namespace, localityKey(proxy.locality), proxy.network, proxyLabels(proxy)]);
  const reads = localityReads(view.config.destinationRules);
  const known = VIEW_KEYS.get(proxy);
  if (known?.reads === reads) return known.key;
  const key = reads.namespace
    ? JSON.stringify([proxy.namespace, ...meshPlaceKey(reads, placeOf(proxy))])
    : '';
  VIEW_KEYS.set(proxy, { reads, key });
  return key;
}

/** What of the view loadAssignmentViewKey reads: the mesh's locality reads (equal ones are one object). */
export function loadAssignmentViewKeyReads(view: ServingView): LocalityReads {
  return localityReads(view.config.destinationRules);
}

/** Each proxy's key for the rules last asked about (one mesh config at a time, in practice). */
const VIEW_KEYS = new WeakMap<Proxy, { readonly reads: LocalityReads; readonly key: string }>();

/**
 * Assignments by what they really depend on: the rule's plan decides how much of the proxy's place
 * matters (nothing without locality settings, the locality for failover, ...), so views that
 * differ only in what the plan ignores build an assignment once per serving view, not once each.
 */
const ASSIGNMENTS = memoSlot<EncodedResource | undefined>('load-assignment');
const PLANS = memoSlot<LocalityLbPlan>('locality-lb-plan');

/** A proxy's place never changes (a Proxy is immutable): derived once per proxy. */
const PLACES = new WeakMap<Proxy, ProxyPlace>();
function placeOf(proxy: Proxy): ProxyPlace {
  let place = PLACES.get(proxy);
  if (!place) PLACES.set(proxy, (place = proxyPlace(proxy)));
  return place;
}

export function buildLoadAssignment(ctx: GenerateContext, name: string): EncodedResource | undefined {
  const { catalog, proxy } = ctx;
  const key = parseClusterName(name);
  if (!key || key.direction !== 'outbound') return undefined;
  const service = catalog.service(key.hostname);
  if (!service || service.resolution !== 'STATIC') return undefined;
  // Views of one namespace share the plan; each view's rebuild after a change is then two lookups.
  const plan = ctx.memo.get(PLANS, `${name}\0${proxy.namespace}`, ctx, (ctx) =>
    localityLbPlan(
      clusterPolicy(ctx.index, key.hostname, key.port, key.subset, proxy.namespace, service.namespace)
        ?.policy,
    ),
  );
  const place = placeOf(proxy);
  const memoKey = JSON.stringify([name, proxy.namespace, placeKey(plan, place)]);
  return ctx.memo.get(ASSIGNMENTS, memoKey, ctx, (ctx) => {
    let endpoints = ctx.catalog.endpoints(key.hostname, key.port);
    if (key.subset !== '') {
      const subset = findSubset(ctx.index, ctx.catalog, key.hostname, key.subset, proxy.namespace);
      if (!subset) return undefined;
      endpoints = subsetEndpoints(endpoints, subset);
    }
    const assignment: ClusterLoadAssignment = {
      cluster_name: name,
      endpoints: priorityGroups(endpoints, plan, place).map(localityEndpoints),
    };
    return encodeWireForm(ENDPOINT, name, assignment);
  });
}

/** envoy.config.core.v3.HealthStatus's numbers: the assignment is built in wire form (encodeWireForm). */
const HEALTH_STATUS: Readonly<Record<Health, HealthStatus>> = { HEALTHY: 1, UNHEALTHY: 2, DRAINING: 3 };

function localityEndpoints(group: PriorityGroup): LocalityLbEndpoints {
  // Sorted by address:port, each key built once (not once per comparison).
  const sorted = group.endpoints
    .map((pe) => ({ pe, key: `${pe.endpoint.address}:${pe.port}` }))
    .sort((a, b) => compare(a.key, b.key));
  return {
    locality: { region: group.locality.region, zone: group.locality.zone, sub_zone: group.locality.subzone },
    load_balancing_weight: { value: group.weight },
    // Written even when 0 (protobufjs encodes a set field), so dumps show every group's priority.
    priority: group.priority,
    lb_endpoints: sorted.map(({ pe }) => ({
      endpoint: { address: { socket_address: { address: pe.endpoint.address, port_value: pe.port } } },
      health_status: HEALTH_STATUS[pe.endpoint.health],
      load_balancing_weight: { value: pe.endpoint.weight },
    })),
  };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
