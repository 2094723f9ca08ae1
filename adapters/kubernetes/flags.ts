// `--kubeconfig`: which clusters to watch, each with its cluster id. A comma list (the flag may also be
// repeated) of `PATH[#CONTEXT][=CLUSTER_ID]`:
//
//   --kubeconfig /etc/portolan/east.yaml=east,/etc/portolan/west.yaml=west
//   --kubeconfig ~/.kube/config#prod-eu=eu --kubeconfig ~/.kube/config#prod-us=us
//
// CONTEXT defaults to the file's current-context, CLUSTER_ID to the context's name. Without
// `--kubeconfig`, Portolan runs in a pod and uses its service account (in-cluster config) with the
// cluster id `Kubernetes`, Istio's default. Loading the files is kubeconfig.ts.
import { OptionError } from '../option-values.js';

export interface KubeconfigEntry {
  readonly path: string;
  readonly context?: string;
  readonly clusterId?: string;
}

export const CLUSTER_ID = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,62}[A-Za-z0-9])?$/;

/** Parses the flag's values (each a comma list) into entries; throws OptionError. */
export function parseKubeconfigFlag(values: readonly string[]): KubeconfigEntry[] {
  const entries: KubeconfigEntry[] = [];
  for (const value of values) {
    for (const item of value.split(',').map((s) => s.trim())) {
      if (item === '') throw new OptionError(`--kubeconfig: empty entry in "${value}"`);
      const eq = item.lastIndexOf('=');
      const location = eq >= 0 ? item.slice(0, eq) : item;
      const clusterId = eq >= 0 ? item.slice(eq + 1) : undefined;
      const hash = location.lastIndexOf('#');
      const path = hash >= 0 ? location.slice(0, hash) : location;
      const context = hash >= 0 ? location.slice(hash + 1) : undefined;
      if (path === '') throw new OptionError(`--kubeconfig: "${item}" has no file path`);
      if (context === '') throw new OptionError(`--kubeconfig: "${item}" has an empty context after #`);
      if (clusterId !== undefined && !CLUSTER_ID.test(clusterId))
        throw new OptionError(
          `--kubeconfig: cluster id "${clusterId}" in "${item}": use letters, digits, '.', '_' and '-' (at most 64)`,
        );
      entries.push({
        path,
        ...(context !== undefined && { context }),
        ...(clusterId !== undefined && { clusterId }),
      });
    }
  }
  return entries;
}
