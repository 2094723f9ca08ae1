// One document → one typed resource: the Kubernetes-style envelope (apiVersion, kind, metadata),
// then the spec by kind. Kinds and apiVersions we do not serve are ignored with a warning, near
// misses of ours are errors (api-kind.ts).
import type { FieldPath } from '../parse.js';
import type { AnyConfigResource, ConfigKind } from '../../mesh/types.js';
import { classifyKind } from './api-kind.js';
import { authorizationPolicySpec } from './authorization-policy.js';
import { stringMap } from './common.js';
import { destinationRuleSpec } from './destination-rule.js';
import { gatewaySpec } from './gateway.js';
import { peerAuthenticationSpec } from './peer-authentication.js';
import { requestAuthenticationSpec } from './request-authentication.js';
import { isRecord, obj, str, unknownField, type Check, type Problems } from './schema.js';
import { serviceEntrySpec } from './service-entry.js';
import { sidecarSpec } from './sidecar.js';
import { virtualServiceSpec } from './virtual-service.js';
import { checkHealthAnnotation, workloadEntrySpec } from './workload-entry.js';
import { workloadGroupSpec } from './workload-group.js';

const SPECS: Record<ConfigKind, Check<unknown>> = {
  ServiceEntry: serviceEntrySpec,
  WorkloadEntry: workloadEntrySpec,
  WorkloadGroup: workloadGroupSpec,
  VirtualService: virtualServiceSpec,
  DestinationRule: destinationRuleSpec,
  Gateway: gatewaySpec,
  Sidecar: sidecarSpec,
  PeerAuthentication: peerAuthenticationSpec,
  AuthorizationPolicy: authorizationPolicySpec,
  RequestAuthentication: requestAuthenticationSpec,
};

// Kubernetes ObjectMeta fields (`kubectl get -o yaml` adds most); accepted silently so exported
// manifests load as they are.
const SERVER_METADATA = [
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'managedFields',
  'selfLink',
  'generateName',
  'finalizers',
  'ownerReferences',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
];

const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

const metadata = obj(
  {
    name: str({
      test: (s) =>
        s.length <= 253 && SUBDOMAIN.test(s)
          ? undefined
          : `must be a lower-case DNS name, got ${JSON.stringify(s)}`,
    }),
    namespace: str({
      test: (s) => (LABEL.test(s) ? undefined : `must be a lower-case DNS label, got ${JSON.stringify(s)}`),
    }),
    labels: stringMap,
    annotations: stringMap,
    ...Object.fromEntries(SERVER_METADATA.map((k) => [k, (v: unknown) => v])),
  },
  { required: ['name'] },
);

export interface Origin {
  readonly file: string;
  readonly line: number;
}

/**
 * Validates one resource at `path` (empty for a document, `['items', 3]` inside a List).
 * Returns the resource, or undefined when it was ignored (a warning) or invalid (errors).
 */
export function validateResource(
  value: unknown,
  path: FieldPath,
  origin: Origin,
  problems: Problems,
): AnyConfigResource | undefined {
  if (!isRecord(value)) {
    problems.error(path, 'must be an object with apiVersion, kind, metadata and spec');
    return undefined;
  }
  const apiVersion = requiredField(value, 'apiVersion', path, str({ nonEmpty: true }), problems);
  const kind = requiredField(value, 'kind', path, str({ nonEmpty: true }), problems);
  if (apiVersion === undefined || kind === undefined) return undefined;
  const verdict = classifyKind(apiVersion, kind);
  if (!('kind' in verdict)) {
    if (verdict.severity === 'error') problems.error([...path, verdict.field], verdict.message);
    else problems.warn([...path, verdict.field], verdict.message);
    return undefined;
  }
  const configKind = verdict.kind;
  for (const key of Object.keys(value)) {
    if (!ENVELOPE.includes(key)) problems.unknown([...path, key], unknownField(key, ENVELOPE));
  }

  const errorsBefore = problems.errors.length;
  const meta = requiredField(value, 'metadata', path, metadata, problems);
  const spec = requiredField(value, 'spec', path, SPECS[configKind], problems);
  const annotations = meta?.annotations ?? {};
  if (configKind === 'WorkloadEntry')
    checkHealthAnnotation(annotations, [...path, 'metadata', 'annotations'], problems);
  if (problems.errors.length > errorsBefore || meta?.name === undefined || spec === undefined)
    return undefined;

  return {
    kind: configKind,
    apiVersion,
    name: meta.name,
    namespace: meta.namespace ?? 'default',
    labels: meta.labels ?? {},
    annotations,
    // SPECS[kind] produced this spec; the pairing is not visible to the type checker through the table.
    spec,
    file: origin.file,
    line: origin.line,
  } as AnyConfigResource;
}

const ENVELOPE = ['apiVersion', 'kind', 'metadata', 'spec', 'status'];

function requiredField<T>(
  record: Record<string, unknown>,
  key: string,
  path: FieldPath,
  check: Check<T>,
  problems: Problems,
): T | undefined {
  const value = record[key];
  if (value === undefined || value === null) {
    problems.error([...path, key], 'is required');
    return undefined;
  }
  return check(value, [...path, key], problems);
}
