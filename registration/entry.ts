// What one auto-registered VM becomes: a WorkloadEntry built from its group's template (Istio's
// auto-registration), named after the group and the VM's address, with the health its agent reports.
import type { WorkloadEntryResource, WorkloadGroupResource } from '../mesh/types.js';

/** The annotation health is expressed with (the config directory's `portolan.io/health`). */
export const HEALTH_ANNOTATION = 'portolan.io/health';
/** Marks an entry as auto-registered, with the node id of the agent that registered it. */
export const REGISTERED_BY_ANNOTATION = 'portolan.io/auto-registered-by';
/** Where /debug/configz-style references point for an entry that has no file. */
export const AUTO_REGISTERED_FILE = '(auto-registered)';

/** One VM registered into a group, as the control plane keeps it (and stores it). */
export interface Registration {
  readonly group: string;
  readonly namespace: string;
  readonly address: string;
  readonly nodeId: string;
  /** The agent's service account (its certificate's). */
  readonly serviceAccount: string;
  /** The last probe result its agent reported; undefined before the first. */
  readonly health?: ProbeHealth;
}

export interface ProbeHealth {
  readonly healthy: boolean;
  /** Why not, when unhealthy (the probe's error). */
  readonly message: string;
  readonly at: string;
}

/** Istio's name: GROUP-ADDRESS, the address with `.` and `:` as `-`. */
export function entryName(group: string, address: string): string {
  return `${group}-${address.replace(/[.:]/g, '-')}`.toLowerCase();
}

/** `namespace/name` of the entry a registration makes. */
export function registrationKey(r: Pick<Registration, 'group' | 'namespace' | 'address'>): string {
  return `${r.namespace}/${entryName(r.group, r.address)}`;
}

/**
 * The entry: the group's metadata and template, the VM's address, and its health — UNHEALTHY while
 * a group with a probe has had no passing report yet, so traffic waits for the application.
 */
export function buildEntry(r: Registration, group: WorkloadGroupResource): WorkloadEntryResource {
  const { template = {}, metadata = {}, probe } = group.spec;
  const healthy = probe === undefined || r.health?.healthy === true;
  const annotations: Record<string, string> = {
    ...metadata.annotations,
    [REGISTERED_BY_ANNOTATION]: r.nodeId,
  };
  if (!healthy) annotations[HEALTH_ANNOTATION] = 'UNHEALTHY';
  const labels = { ...metadata.labels, ...template.labels };
  return {
    kind: 'WorkloadEntry',
    apiVersion: group.apiVersion,
    name: entryName(r.group, r.address),
    namespace: r.namespace,
    labels,
    annotations,
    spec: {
      ...template,
      address: r.address,
      labels,
      serviceAccount: template.serviceAccount ?? r.serviceAccount,
    },
    file: AUTO_REGISTERED_FILE,
    line: 0,
  };
}
