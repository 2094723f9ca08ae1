// Whether routes inject faults: proxyless gRPC listeners carry the fault filter only when some route
// does, so a change of this answer reaches every gRPC listener (mesh/config-change.ts).
import type { MeshConfig } from './mesh-config.js';
import type { VirtualServiceResource } from './types.js';

/** Whether any of the VirtualService's HTTP routes injects faults. */
export function routesInjectFaults(vs: VirtualServiceResource): boolean {
  return (vs.spec.http ?? []).some((r) => r.fault !== undefined);
}

/** Whether any VirtualService injects faults: only then do gRPC listeners carry the fault filter. */
export function configHasFaults(config: MeshConfig): boolean {
  return config.virtualServices.some(routesInjectFaults);
}
