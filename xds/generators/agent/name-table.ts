// NDS: the name table an agent's DNS proxy answers A and AAAA queries from (Istio's NameTable), one
// resource named `name-table`. Every non-wildcard hostname the node may see — its Sidecar scope
// applied as for Envoy's clusters — with the service's own IP addresses, or the auto-allocated
// ones (mesh/auto-addresses.ts) for a service without any. Kubernetes-form hosts
// (NAME.NS.svc.DOMAIN) carry their short name and namespace, so the agent answers `NAME.NS` and,
// in its own namespace, `NAME`, as Istio's DNS proxy does.
import { serviceIps } from '../../../mesh/auto-addresses.js';
import type { ProxyKind } from '../../proxy/proxy.js';
import { encodeResource } from '../../proto/resource.js';
import { NAME_TABLE } from '../../proto/type-urls.js';
import { autoAddresses } from '../auto-addresses.js';
import type { GenerateContext, ResourceGenerator } from '../generator.js';

export const NAME_TABLE_RESOURCE = 'name-table';

interface NameInfo {
  ips: string[];
  registry: string;
  shortname?: string;
  namespace?: string;
}

const KUBE_FORM = /^([a-z0-9-]+)\.([a-z0-9-]+)\.svc\.[a-z0-9.-]+$/;

/** The node's labels for Sidecar selection: an Envoy's LABELS metadata, none for the agent itself. */
function labelsOf(metadata: Readonly<Record<string, unknown>>): Record<string, string> {
  const labels = metadata.LABELS;
  if (!labels || typeof labels !== 'object' || Array.isArray(labels)) return {};
  return Object.fromEntries(
    Object.entries(labels as Record<string, unknown>).filter(
      (e): e is [string, string] => typeof e[1] === 'string',
    ),
  );
}

export function nameTable(ctx: GenerateContext): Record<string, NameInfo> {
  const scope = ctx.index.sidecars.scope(ctx.proxy.namespace, labelsOf(ctx.proxy.metadata));
  const allocated = autoAddresses(ctx);
  const table: Record<string, NameInfo> = {};
  for (const s of ctx.catalog.services()) {
    if (s.hostname.startsWith('*') || !scope.clusters(s)) continue;
    const own = serviceIps(s);
    const auto = allocated.get(s.hostname);
    const ips = own.length > 0 ? own : auto ? [auto.v4, auto.v6] : [];
    if (ips.length === 0) continue;
    const kube = KUBE_FORM.exec(s.hostname);
    table[s.hostname] = {
      ips,
      registry: s.registry,
      ...(kube && { shortname: kube[1], namespace: kube[2] }),
    };
  }
  return table;
}

export function nameTableGenerator(proxyKind: ProxyKind): ResourceGenerator {
  return {
    typeUrl: NAME_TABLE,
    proxyKind,
    // Sidecar selection reads the namespace and the labels.
    viewKey: (proxy) => JSON.stringify([proxy.namespace, labelsOf(proxy.metadata)]),
    wildcardNames: () => [NAME_TABLE_RESOURCE],
    build(ctx, name) {
      if (name !== NAME_TABLE_RESOURCE) return undefined;
      return encodeResource(NAME_TABLE, name, { table: nameTable(ctx) });
    },
  };
}
