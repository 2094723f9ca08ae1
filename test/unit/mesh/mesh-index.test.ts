// MeshIndex answers exactly what a scan of the whole config answers (Istio's rules, written out
// plainly below): over many generated configs, every VirtualService and DestinationRule lookup of
// the index equals the scan's, so the indexing by gateway, namespace and exact host changes nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EMPTY_MESH_CONFIG, type MeshConfig } from '../../../mesh/mesh-config.js';
import { bestMatch, resolveHost } from '../../../mesh/hosts.js';
import { MeshIndex } from '../../../mesh/mesh-index.js';
import type { DestinationRuleResource, VirtualServiceResource } from '../../../mesh/types.js';
import { boundGateways, MESH_GATEWAY } from '../../../mesh/virtual-service-index.js';
import { ROOT_NAMESPACE } from '../../../mesh/destination-rule-index.js';
import { visibleTo } from '../../../mesh/visibility.js';

/** The reference: every VirtualService in config order, the most specific match, first among equals. */
function scanVirtualService(config: MeshConfig, host: string, ns: string, gateway: string) {
  let best: { vs: VirtualServiceResource; specificity: number } | undefined;
  for (const vs of config.virtualServices) {
    if (!boundGateways(vs).includes(gateway)) continue;
    if (gateway === MESH_GATEWAY && !visibleTo(vs.spec.exportTo, vs.namespace, ns)) continue;
    const match = bestMatch(
      vs.spec.hosts.map((h) => resolveHost(h, vs.namespace)),
      host,
    );
    if (match && (!best || match.specificity > best.specificity))
      best = { vs, specificity: match.specificity };
  }
  return best?.vs;
}

/** The reference: the proxy's namespace, the service's, the root; per tier as above. */
function scanDestinationRule(config: MeshConfig, host: string, ns: string, serviceNs: string | undefined) {
  for (const tier of [ns, serviceNs, ROOT_NAMESPACE]) {
    if (tier === undefined) continue;
    let best: { rule: DestinationRuleResource; specificity: number } | undefined;
    for (const rule of config.destinationRules) {
      if (rule.namespace !== tier || !visibleTo(rule.spec.exportTo, rule.namespace, ns)) continue;
      const match = bestMatch([resolveHost(rule.spec.host, rule.namespace)], host);
      if (match && (!best || match.specificity > best.specificity))
        best = { rule, specificity: match.specificity };
    }
    if (best) return best.rule;
  }
  return undefined;
}

/** A small deterministic generator (mulberry32), so a failure reproduces. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const NAMESPACES = ['shop', 'web', ROOT_NAMESPACE];
const HOSTS = [
  'reviews',
  'reviews.shop.svc.cluster.local',
  'a.mesh.internal',
  'b.mesh.internal',
  'x.example.com',
];
const PATTERNS = [
  ...HOSTS,
  '*.mesh.internal',
  '*.internal',
  '*',
  '*.example.com',
  '*.shop.svc.cluster.local',
];
const EXPORTS = [undefined, ['.'], ['*'], ['~'], ['web'], ['shop', 'web']];
const GATEWAYS = [undefined, ['mesh'], ['ingress'], ['shop/ingress', 'mesh'], ['ingress', 'ingress']];

function envelope<K extends string, T>(kind: K, name: string, namespace: string, spec: T) {
  const meta = { kind, apiVersion: 'networking.istio.io/v1', name, namespace, labels: {}, annotations: {} };
  return { ...meta, spec, file: `${name}.yaml`, line: 1 };
}

function generatedConfig(next: () => number): MeshConfig {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
  const virtualServices: VirtualServiceResource[] = [];
  const destinationRules: DestinationRuleResource[] = [];
  for (let i = 0; i < 12; i++) {
    const hosts = Array.from({ length: 1 + Math.floor(next() * 3) }, () => pick(PATTERNS));
    const gateways = pick(GATEWAYS);
    const exportTo = pick(EXPORTS);
    virtualServices.push(
      envelope('VirtualService', `vs-${i}`, pick(NAMESPACES), {
        hosts,
        ...(gateways && { gateways }),
        ...(exportTo && { exportTo }),
      }),
    );
    const drExport = pick(EXPORTS);
    destinationRules.push(
      envelope('DestinationRule', `dr-${i}`, pick(NAMESPACES), {
        host: pick(PATTERNS),
        ...(drExport && { exportTo: drExport }),
      }),
    );
  }
  return { ...EMPTY_MESH_CONFIG, generation: 1, virtualServices, destinationRules };
}

test('index lookups equal a scan of the config, for every host, namespace and gateway', () => {
  const next = random(14);
  let found = 0;
  for (let round = 0; round < 200; round++) {
    const config = generatedConfig(next);
    const index = new MeshIndex(config);
    const lookupHosts = [...HOSTS.map((h) => resolveHost(h, 'shop')), 'c.mesh.internal', 'nothing.else'];
    for (const host of lookupHosts)
      for (const ns of NAMESPACES) {
        for (const gateway of [MESH_GATEWAY, 'shop/ingress', 'web/ingress']) {
          const want = scanVirtualService(config, host, ns, gateway);
          assert.equal(index.virtualServices.lookup(host, ns, gateway), want, `VS ${host} ${ns} ${gateway}`);
          if (want) found += 1;
        }
        for (const serviceNs of [undefined, ...NAMESPACES]) {
          const want = scanDestinationRule(config, host, ns, serviceNs);
          assert.equal(
            index.destinationRules.lookup(host, ns, serviceNs),
            want,
            `DR ${host} ${ns} ${serviceNs}`,
          );
          if (want) found += 1;
        }
      }
  }
  assert.ok(found > 1000, `the generated configs match often enough to mean something (${found})`);
});
