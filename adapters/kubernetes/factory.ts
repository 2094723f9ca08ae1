// `--registries kubernetes`: its flags on `portolan serve`, and the registry built from them.
import type { Command } from 'commander';
import type { RegistryFactory } from '../registry-factory.js';
import { OptionError } from '../option-values.js';
import { parseKubeconfigFlag } from './flags.js';

export const DEFAULT_DOMAIN = 'cluster.local';

// A DNS name: labels of letters, digits and inner hyphens.
const DOMAIN = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

export const kubernetesFactory: RegistryFactory = {
  name: 'kubernetes',

  addFlags(command: Command): void {
    command
      .option(
        '--kubeconfig <list>',
        'kubernetes: clusters to watch, PATH[#CONTEXT][=CLUSTER_ID],... (repeatable; none: in-cluster config)',
        (value: string, previous: string[] = []) => [...previous, value],
      )
      .option(
        '--domain <domain>',
        'kubernetes: cluster DNS domain; hostnames are SVC.NS.svc.DOMAIN',
        DEFAULT_DOMAIN,
      );
  },

  async create({ flags, logger }) {
    const domain = flags.domain ?? DEFAULT_DOMAIN;
    if (typeof domain !== 'string' || !DOMAIN.test(domain))
      throw new OptionError(
        `--domain: expected a DNS domain like cluster.local, got ${JSON.stringify(domain)}`,
      );
    const entries = parseKubeconfigFlag(kubeconfigValues(flags.kubeconfig));
    // Loaded here, not at the top: @kubernetes/client-node takes over a second to import.
    const { loadClusters } = await import('./kubeconfig.js');
    const { KubernetesRegistry } = await import('./registry.js');
    const clusters = loadClusters(entries);
    logger.info(
      { clusters: clusters.map((c) => ({ id: c.id, server: c.config.getCurrentCluster()?.server })), domain },
      'kubernetes registry configured',
    );
    return new KubernetesRegistry({ clusters, domain, logger });
  },
};

/** Commander gives the repeated flag as a list; a programmatic caller may pass one string. */
function kubeconfigValues(value: unknown): string[] {
  if (value === undefined) return [];
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value;
  throw new OptionError('--kubeconfig: expected PATH[#CONTEXT][=CLUSTER_ID],...');
}
