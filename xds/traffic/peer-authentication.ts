// Which mTLS mode a workload's inbound port runs, from the PeerAuthentications in the config: Istio's
// precedence — mesh-wide (root namespace, no selector) < namespace (no selector) < workload (selector
// matching the workload's labels) < that policy's port-level setting; UNSET inherits from the wider
// policy. With no policy setting a mode the result is undefined: Istio would run PERMISSIVE, which needs
// certificates on every workload, so Portolan serves plaintext there until a policy (e.g. a mesh-wide
// PERMISSIVE in the root namespace) opts in. Among several policies of one tier the first in the config
// (file path order, then document order) wins; Istio uses the oldest.
import type { MeshConfig } from '../../mesh/mesh-config.js';
import type { MtlsMode, PeerAuthenticationResource } from '../../mesh/types.js';
import { ROOT_NAMESPACE } from '../../mesh/destination-rule-index.js';

export type EffectiveMtls = Exclude<MtlsMode, 'UNSET'>;

export interface Workload {
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
}

export function mtlsModeFor(config: MeshConfig, workload: Workload, port: number): EffectiveMtls | undefined {
  const policies = config.peerAuthentications;
  const wide = (ns: string): PeerAuthenticationResource | undefined =>
    policies.find((p) => p.namespace === ns && !p.spec.selector);
  const selected = policies.find(
    (p) =>
      p.namespace === workload.namespace &&
      p.spec.selector &&
      matches(p.spec.selector.matchLabels, workload.labels),
  );
  let mode: EffectiveMtls | undefined;
  const apply = (m: MtlsMode | undefined): void => {
    if (m && m !== 'UNSET') mode = m;
  };
  apply(wide(ROOT_NAMESPACE)?.spec.mtls?.mode);
  if (workload.namespace !== ROOT_NAMESPACE) apply(wide(workload.namespace)?.spec.mtls?.mode);
  apply(selected?.spec.mtls?.mode);
  apply(selected?.spec.portLevelMtls?.[String(port)]?.mode);
  return mode;
}

function matches(
  selector: Readonly<Record<string, string>>,
  labels: Readonly<Record<string, string>>,
): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}
