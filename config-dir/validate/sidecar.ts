// Sidecar: which services a namespace's (or selected) proxies are sent, by egress `namespace/host`.
// Portolan uses it to trim Envoy's CDS/EDS/LDS/RDS; `bind` and `captureMode` are accepted and not
// rendered (the listener layout comes from the node's outbound modes, docs/envoy.md).
import type { SidecarSpec } from '../../mesh/types.js';
import { isHostOrWildcard, portNumber, protocol, stringMap } from './common.js';
import { arrayOf, obj, oneOf, str, type Check } from './schema.js';

const NAMESPACE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** `ns/host` with ns `.`, `*`, `~` or a namespace name; host `*`, `*.suffix` or a DNS name. */
const egressHost = str({
  test: (s) => {
    const slash = s.indexOf('/');
    if (slash < 0)
      return `must be namespace/host (e.g. "./*", "*/*", "istio-system/*"), got ${JSON.stringify(s)}`;
    const ns = s.slice(0, slash);
    const host = s.slice(slash + 1);
    if (ns.length > 1 && ns.startsWith('~') && NAMESPACE.test(ns.slice(1)))
      return `excluding a namespace (${JSON.stringify(ns)}) is not supported: list the namespaces to include`;
    if (ns !== '.' && ns !== '*' && ns !== '~' && !NAMESPACE.test(ns))
      return `namespace part must be ".", "*", "~" or a namespace name, got ${JSON.stringify(ns)}`;
    return isHostOrWildcard(host)
      ? undefined
      : `host part must be a hostname or wildcard, got ${JSON.stringify(host)}`;
  },
});

const egressListener = obj(
  {
    hosts: arrayOf(egressHost, { nonEmpty: true }),
    port: obj(
      { number: portNumber, protocol, name: str() },
      { required: ['number'], message: 'SidecarPort' },
    ),
    bind: str(),
    captureMode: oneOf(['DEFAULT', 'IPTABLES', 'NONE']),
  },
  { required: ['hosts'], message: 'IstioEgressListener' },
);

export const sidecarSpec: Check<SidecarSpec> = obj(
  {
    workloadSelector: obj(
      { labels: stringMap },
      { required: ['labels'], message: 'Sidecar.WorkloadSelector' },
    ),
    egress: arrayOf(egressListener),
    outboundTrafficPolicy: obj(
      { mode: oneOf(['ALLOW_ANY', 'REGISTRY_ONLY']) },
      { required: ['mode'], message: 'OutboundTrafficPolicy' },
    ),
  },
  {
    message: 'Sidecar',
    refine: (sidecar, path, problems) => {
      // Istio's rules: one catch-all (portless) egress entry at most, and ports not repeated.
      const ports = new Set<number>();
      let catchAll: number | undefined;
      sidecar.egress?.forEach((e, i) => {
        const n = e.port?.number;
        if (n === undefined) {
          if (catchAll !== undefined)
            problems.error(
              [...path, 'egress', i],
              `only one egress entry may omit port; egress[${catchAll}] already does`,
            );
          catchAll = i;
        } else if (ports.has(n))
          problems.error([...path, 'egress', i, 'port', 'number'], `duplicate port ${n}`);
        else ports.add(n);
      });
    },
  },
);
