// Loads the clusters `--kubeconfig` names, with @kubernetes/client-node's KubeConfig (contexts,
// credentials, in-cluster service account). Imported only when the kubernetes registry is used: the
// library takes over a second to load.
import { KubeConfig } from '@kubernetes/client-node';
import { OptionError } from '../option-values.js';
import { CLUSTER_ID, type KubeconfigEntry } from './flags.js';
import type { KubeCluster } from './registry.js';

/** The in-cluster config's cluster id: Istio's default. */
export const IN_CLUSTER_ID = 'Kubernetes';

/** Loads each entry's kubeconfig (or the in-cluster config when there are none); throws OptionError. */
export function loadClusters(entries: readonly KubeconfigEntry[]): KubeCluster[] {
  if (entries.length === 0) return [{ id: IN_CLUSTER_ID, config: inClusterConfig() }];
  const clusters = entries.map((entry) => loadEntry(entry));
  const seen = new Set<string>();
  for (const c of clusters) {
    if (seen.has(c.id))
      throw new OptionError(
        `--kubeconfig: cluster id "${c.id}" is used twice; give each cluster its own (PATH=ID)`,
      );
    seen.add(c.id);
  }
  return clusters;
}

function loadEntry(entry: KubeconfigEntry): KubeCluster {
  const config = new KubeConfig();
  try {
    config.loadFromFile(entry.path);
  } catch (err) {
    throw new OptionError(`--kubeconfig ${entry.path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const context = entry.context ?? config.getCurrentContext();
  if (!context || !config.getContextObject(context))
    throw new OptionError(
      `--kubeconfig ${entry.path}: ${context ? `no context "${context}"` : 'no current-context; name one with PATH#CONTEXT'}`,
    );
  config.setCurrentContext(context);
  checkCluster(config, `--kubeconfig ${entry.path} (context ${context})`);
  const id = entry.clusterId ?? context;
  if (!CLUSTER_ID.test(id))
    throw new OptionError(
      `--kubeconfig ${entry.path}: context name "${id}" is not a usable cluster id; add =ID`,
    );
  return { id, config };
}

function inClusterConfig(): KubeConfig {
  // KubeConfig.loadFromCluster reads these from process.env itself.
  if (!process.env.KUBERNETES_SERVICE_HOST || !process.env.KUBERNETES_SERVICE_PORT)
    throw new OptionError(
      '--registries kubernetes: no --kubeconfig given and not running in a pod (KUBERNETES_SERVICE_HOST is unset)',
    );
  const config = new KubeConfig();
  config.loadFromCluster();
  return config;
}

function checkCluster(config: KubeConfig, where: string): void {
  const cluster = config.getCurrentCluster();
  if (!cluster?.server) throw new OptionError(`${where}: the context has no cluster with a server URL`);
  let url: URL;
  try {
    url = new URL(cluster.server);
  } catch {
    throw new OptionError(`${where}: server "${cluster.server}" is not a URL`);
  }
  // @kubernetes/client-node refuses plain HTTP unless TLS verification is explicitly off.
  if (url.protocol === 'http:' && !cluster.skipTLSVerify)
    throw new OptionError(
      `${where}: server ${cluster.server} is plain HTTP; set insecure-skip-tls-verify: true to allow it`,
    );
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new OptionError(`${where}: server ${cluster.server} is not http(s)`);
}
