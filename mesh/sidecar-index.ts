// Sidecar selection, as Istio does it: the Sidecar in the proxy's namespace whose workloadSelector
// matches the proxy's labels, else the namespace's Sidecar without a selector, else the root
// namespace's Sidecar without a selector; first in config order within each tier (Istio: the
// oldest). Sidecars are grouped by namespace; each view's scope is built once.
import type { SidecarResource } from './types.js';
import { ROOT_NAMESPACE } from './destination-rule-index.js';
import { sidecarScope, type ProxyScope } from './sidecar-scope.js';

type Labels = Readonly<Record<string, string>>;

/** Scopes kept per index, by namespace and labels, before they are dropped and built again. */
const MAX_ANSWERS = 4096;

export class SidecarIndex {
  private readonly byNamespace = new Map<string, SidecarResource[]>();
  /** Asked once per cluster, listener and route built: one scope per namespace and labels. */
  private readonly scopes = new Map<string, ProxyScope>();

  constructor(sidecars: readonly SidecarResource[]) {
    for (const s of sidecars) {
      const list = this.byNamespace.get(s.namespace) ?? [];
      list.push(s);
      this.byNamespace.set(s.namespace, list);
    }
  }

  /** The Sidecar that selects a proxy in `namespace` with `labels`, if any. */
  lookup(namespace: string, labels: Labels): SidecarResource | undefined {
    const own = this.byNamespace.get(namespace) ?? [];
    return (
      own.find((s) => s.spec.workloadSelector && selects(s.spec.workloadSelector.labels, labels)) ??
      own.find((s) => !s.spec.workloadSelector) ??
      this.byNamespace.get(ROOT_NAMESPACE)?.find((s) => !s.spec.workloadSelector)
    );
  }

  /** What that Sidecar lets the proxy be sent (everything without one). */
  scope(namespace: string, labels: Labels): ProxyScope {
    const key = JSON.stringify([namespace, labels]);
    let scope = this.scopes.get(key);
    if (!scope) {
      // Kept while the Sidecars are (mesh-index.ts): bounded, as proxies come and go meanwhile.
      if (this.scopes.size >= MAX_ANSWERS) this.scopes.clear();
      this.scopes.set(key, (scope = sidecarScope(this.lookup(namespace, labels))));
    }
    return scope;
  }

  /** The outbound policy the selecting Sidecar sets, if it does. */
  outboundPolicy(namespace: string, labels: Labels): 'ALLOW_ANY' | 'REGISTRY_ONLY' | undefined {
    return this.lookup(namespace, labels)?.spec.outboundTrafficPolicy?.mode;
  }
}

function selects(selector: Labels, labels: Labels): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}
