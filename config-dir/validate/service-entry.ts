// ServiceEntry: hosts × ports, resolved through inline endpoints, selected WorkloadEntries, or DNS.
import type { FieldPath } from '../parse.js';
import type { ServiceEntrySpec, WorkloadEntrySpec } from '../../mesh/types.js';
import {
  addressKind,
  hostOrWildcard,
  ipOrCidr,
  isWildcard,
  portNumber,
  protocol,
  stringMap,
} from './common.js';
import { arrayOf, obj, oneOf, str, type Check, type Problems } from './schema.js';
import { workloadEntrySpec } from './workload-entry.js';

const port = obj(
  { number: portNumber, protocol, name: str({ nonEmpty: true }), targetPort: portNumber },
  { required: ['number', 'name'], message: 'ServicePort' },
);

// Istio accepts a selector without labels (`workloadSelector: {}`); it selects no workload
// (labels.Instance.Match is false for an empty selector), which refineServiceEntry warns about.
const selectorFields = obj({ labels: stringMap }, { message: 'ServiceEntry.WorkloadSelector' });
const workloadSelector: Check<{ labels: Record<string, string> }> = (value, path, problems) => {
  const selector = selectorFields(value, path, problems);
  return selector && { labels: selector.labels ?? {} };
};

export const serviceEntrySpec: Check<ServiceEntrySpec> = obj(
  {
    hosts: arrayOf(hostOrWildcard, { nonEmpty: true }),
    addresses: arrayOf(ipOrCidr),
    // Istio allows a ServiceEntry without ports; without them we could build no cluster, so we require one.
    ports: arrayOf(port, { nonEmpty: true }),
    location: oneOf(['MESH_EXTERNAL', 'MESH_INTERNAL']),
    resolution: oneOf(['NONE', 'STATIC', 'DNS', 'DNS_ROUND_ROBIN']),
    endpoints: arrayOf(workloadEntrySpec),
    workloadSelector,
    exportTo: arrayOf(str()),
    subjectAltNames: arrayOf(str()),
  },
  // An arrow, not the bare function: a typed function here would pin the shape's inference to `Shape`.
  {
    required: ['hosts', 'ports'],
    message: 'ServiceEntry',
    refine: (spec, path, problems) => refineServiceEntry(spec, path, problems),
  },
);

function refineServiceEntry(spec: Partial<ServiceEntrySpec>, path: FieldPath, problems: Problems): void {
  const resolution = spec.resolution ?? 'NONE';
  spec.hosts?.forEach((host, i) => {
    if (host === '*') problems.error([...path, 'hosts', i], '`*` is not a valid ServiceEntry host');
    else if (isWildcard(host) && resolution !== 'NONE') {
      problems.error([...path, 'hosts', i], `wildcard hosts need resolution NONE, not ${resolution}`);
    }
  });
  checkPorts(spec, path, problems);

  if (spec.endpoints !== undefined && spec.workloadSelector !== undefined) {
    problems.error([...path, 'workloadSelector'], 'only one of endpoints and workloadSelector may be set');
  }
  if (spec.workloadSelector && Object.keys(spec.workloadSelector.labels).length === 0) {
    problems.warn(
      [...path, 'workloadSelector'],
      'a selector without labels selects no WorkloadEntry (as in Istio): the service has no endpoints',
    );
  }
  if (spec.endpoints) checkEndpoints(spec.endpoints, spec, path, problems);
  if (resolution === 'STATIC' && !spec.endpoints?.length && !spec.workloadSelector) {
    problems.warn(
      [...path, 'endpoints'],
      'resolution STATIC without endpoints or workloadSelector: the service has no endpoints',
    );
  }
}

function checkPorts(spec: Partial<ServiceEntrySpec>, path: FieldPath, problems: Problems): void {
  const names = new Set<string>();
  const numbers = new Set<number>();
  spec.ports?.forEach((p, i) => {
    if (p.name !== undefined) {
      if (names.has(p.name))
        problems.error([...path, 'ports', i, 'name'], `duplicate port name ${JSON.stringify(p.name)}`);
      names.add(p.name);
    }
    if (p.number !== undefined) {
      if (numbers.has(p.number))
        problems.error([...path, 'ports', i, 'number'], `duplicate port number ${p.number}`);
      numbers.add(p.number);
    }
  });
}

function checkEndpoints(
  endpoints: readonly WorkloadEntrySpec[],
  spec: Partial<ServiceEntrySpec>,
  path: FieldPath,
  problems: Problems,
): void {
  const resolution = spec.resolution ?? 'NONE';
  if (resolution === 'NONE' && endpoints.length > 0) {
    problems.error([...path, 'endpoints'], 'must be empty when resolution is NONE');
    return;
  }
  if (resolution === 'DNS_ROUND_ROBIN' && endpoints.length > 1) {
    // Envoy's LOGICAL_DNS cluster resolves a single name.
    problems.error([...path, 'endpoints'], 'resolution DNS_ROUND_ROBIN allows at most one endpoint');
  }
  // Undefined when the ports themselves failed validation: then do not report every endpoint port too.
  const portNames = spec.ports && new Set(spec.ports.map((p) => p.name));
  endpoints.forEach((endpoint, i) => {
    const at = [...path, 'endpoints', i];
    const kind = endpoint.address === undefined ? undefined : addressKind(endpoint.address);
    if (resolution === 'STATIC' && kind === 'dns') {
      problems.error([...at, 'address'], 'resolution STATIC needs an IP address or unix:///path');
    }
    if (resolution !== 'STATIC' && kind === 'unix') {
      problems.error([...at, 'address'], 'a unix:// endpoint needs resolution STATIC');
    }
    if (kind === 'unix' && spec.ports !== undefined && spec.ports.length !== 1) {
      problems.error([...at, 'address'], 'a unix:// endpoint needs exactly one service port');
    }
    for (const name of Object.keys(endpoint.ports ?? {})) {
      if (portNames && !portNames.has(name))
        problems.error([...at, 'ports', name], `no service port named ${JSON.stringify(name)}`);
    }
  });
}
