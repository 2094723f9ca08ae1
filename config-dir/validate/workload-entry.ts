// WorkloadEntry: one VM or host. The same shape is used inline as a ServiceEntry's `endpoints`.
import type { Health } from '../../model/endpoint.js';
import type { WorkloadEntrySpec, WorkloadTemplate } from '../../mesh/types.js';
import { addressKind, portNumber, stringMap } from './common.js';
import type { FieldPath } from '../parse.js';
import { int, mapOf, obj, str, type Check, type Problems } from './schema.js';

/** Operators drain or fence a VM by annotating its WorkloadEntry; absent means HEALTHY. */
export const HEALTH_ANNOTATION = 'portolan.io/health';
export const HEALTH_VALUES: readonly Health[] = ['HEALTHY', 'DRAINING', 'UNHEALTHY'];

const address = str({
  nonEmpty: true,
  test: (s) => {
    const kind = addressKind(s);
    if (kind === undefined)
      return `must be an IP address, a DNS name or unix:///path, got ${JSON.stringify(s)}`;
    // Istio: "UDS may not be a dir".
    if (kind === 'unix' && s.endsWith('/'))
      return `a Unix socket path may not end in /, got ${JSON.stringify(s)}`;
    return undefined;
  },
});

/** Istio's port names (keys of `ports`): DNS-1123 labels. */
const portNames: Check<Record<string, number>> = (value, path, problems) => {
  const ports = mapOf(portNumber)(value, path, problems);
  for (const name of Object.keys(ports ?? {}))
    if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(name))
      problems.error(
        [...path, name],
        `a port name must be a lower-case DNS label, got ${JSON.stringify(name)}`,
      );
  return ports;
};

const locality = str({
  test: (s) =>
    s.split('/').length > 3 || s.split('/').some((part) => part === '')
      ? `must be region, region/zone or region/zone/subzone, got ${JSON.stringify(s)}`
      : undefined,
});

const entryFields = {
  ports: portNames,
  labels: stringMap,
  network: str(),
  locality,
  // proto3 cannot tell 0 from unset, so Istio (and we) treat 0 as the default weight 1.
  weight: int(0, 4_294_967_295),
  serviceAccount: str(),
};

export const workloadEntrySpec: Check<WorkloadEntrySpec> = obj(
  { address, ...entryFields },
  // Istio allows an empty address for endpoints behind a network gateway; we have no gateways, so it is required.
  { required: ['address'], message: 'WorkloadEntry' },
);

/** A WorkloadGroup's template: a WorkloadEntry whose address comes from the VM that registers. */
export const workloadTemplate: Check<WorkloadTemplate> = obj(
  {
    address: (value, path, problems) => {
      if (value !== '')
        problems.error(path, 'must be empty: each VM registers with its own address (agent --instance-ip)');
      return undefined;
    },
    ...entryFields,
  },
  { message: 'WorkloadEntry' },
);

/** The health an operator set on a WorkloadEntry (case-insensitive); undefined for a value we do not know. */
export function healthOf(annotations: Readonly<Record<string, string>>): Health | undefined {
  const value = annotations[HEALTH_ANNOTATION];
  if (value === undefined) return 'HEALTHY';
  return HEALTH_VALUES.find((h) => h === value.toUpperCase());
}

export function checkHealthAnnotation(
  annotations: Readonly<Record<string, string>>,
  path: FieldPath,
  problems: Problems,
): void {
  if (healthOf(annotations) === undefined) {
    problems.error([...path, HEALTH_ANNOTATION], `must be one of ${HEALTH_VALUES.join(', ')}`);
  }
}
