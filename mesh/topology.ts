// Istio's topology labels: where a workload runs (network, region, zone, subzone), written as labels
// so that `failoverPriority` can rank endpoints by them like any other label. Istio adds them to
// both sides of the comparison (its AugmentLabels): an endpoint gets them from its registry's
// network and locality, a proxy from its node (NETWORK metadata, locality). Derived values win over
// a label of the same name; an empty value adds nothing.
import type { Locality } from '../model/endpoint.js';

export const TOPOLOGY_NETWORK = 'topology.istio.io/network';
export const TOPOLOGY_CLUSTER = 'topology.istio.io/cluster';
export const TOPOLOGY_REGION = 'topology.kubernetes.io/region';
export const TOPOLOGY_ZONE = 'topology.kubernetes.io/zone';
export const TOPOLOGY_SUBZONE = 'topology.istio.io/subzone';
/** Istio's older single label for a locality, `region.zone.subzone` (dots: label values cannot hold `/`). */
export const ISTIO_LOCALITY_LABEL = 'istio-locality';

/** The locality labels: `failover` (region by region) cannot be combined with these in `failoverPriority`. */
export const LOCALITY_LABELS: readonly string[] = [TOPOLOGY_REGION, TOPOLOGY_ZONE, TOPOLOGY_SUBZONE];

/** `labels` with the topology labels of `locality` and `network` added. */
export function topologyLabels(
  labels: Readonly<Record<string, string>>,
  locality: Locality,
  network: string,
): Record<string, string> {
  const out: Record<string, string> = { ...labels };
  const set = (key: string, value: string): void => {
    if (value !== '') out[key] = value;
  };
  set(TOPOLOGY_NETWORK, network);
  set(TOPOLOGY_REGION, locality.region);
  set(TOPOLOGY_ZONE, locality.zone);
  set(TOPOLOGY_SUBZONE, locality.subzone);
  return out;
}

/**
 * The locality a workload's labels declare, Istio's way: the topology labels when any is set, else
 * `istio-locality` (`region.zone.subzone`, or with `/`); undefined when the labels say nothing.
 */
export function localityFromLabels(labels: Readonly<Record<string, string>>): Locality | undefined {
  const region = labels[TOPOLOGY_REGION];
  const zone = labels[TOPOLOGY_ZONE];
  const subzone = labels[TOPOLOGY_SUBZONE];
  if (region !== undefined || zone !== undefined || subzone !== undefined)
    return { region: region ?? '', zone: zone ?? '', subzone: subzone ?? '' };
  const legacy = labels[ISTIO_LOCALITY_LABEL];
  if (!legacy) return undefined;
  const [r = '', z = '', s = ''] = legacy.includes('/') ? legacy.split('/') : legacy.split('.');
  return { region: r, zone: z, subzone: s };
}
