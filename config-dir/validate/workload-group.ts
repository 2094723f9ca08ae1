// WorkloadGroup: the template of the WorkloadEntries VMs register through `portolan agent --group`,
// and the readiness probe their agents run (Istio's networking.istio.io WorkloadGroup).
import { isIP } from 'node:net';
import type { ReadinessProbe, WorkloadGroupSpec } from '../../mesh/types.js';
import { isDnsName, portNumber, stringMap } from './common.js';
import { arrayOf, atMostOne, int, obj, oneOf, str, type Check } from './schema.js';
import { checkHealthAnnotation, workloadTemplate } from './workload-entry.js';

/** Istio's probe header names: a token of letters, digits and `-` (Kubernetes' rule). */
const probeHeaderName = str({
  nonEmpty: true,
  test: (s) =>
    /^[-A-Za-z0-9]+$/.test(s) ? undefined : `must be an HTTP header name, got ${JSON.stringify(s)}`,
});

const PROBE_KINDS = ['httpGet', 'tcpSocket', 'grpc', 'exec'] as const;

const host = str({
  test: (s) =>
    isIP(s) !== 0 || isDnsName(s)
      ? undefined
      : `must be an IP address or a DNS name, got ${JSON.stringify(s)}`,
});

// Bounded so a typo cannot park a probe for days; proto3's 0 means "the default" for each.
const seconds = int(0, 3600);
const threshold = int(0, 1000);

const httpGet = obj(
  {
    path: str({ test: (s) => (s === '' || s.startsWith('/') ? undefined : 'must start with /') }),
    port: portNumber,
    host,
    scheme: oneOf(['HTTP', 'HTTPS']),
    httpHeaders: arrayOf(
      obj({ name: probeHeaderName, value: str() }, { required: ['name'], message: 'HTTPHeader' }),
    ),
  },
  { required: ['port'], message: 'HTTPGetAction' },
);

const probe: Check<ReadinessProbe> = obj(
  {
    initialDelaySeconds: seconds,
    timeoutSeconds: seconds,
    periodSeconds: seconds,
    successThreshold: threshold,
    failureThreshold: threshold,
    httpGet,
    tcpSocket: obj({ host, port: portNumber }, { required: ['port'], message: 'TCPSocketAction' }),
    grpc: obj({ port: portNumber, service: str() }, { required: ['port'], message: 'GrpcAction' }),
    exec: obj(
      { command: arrayOf(str({ nonEmpty: true }), { nonEmpty: true }) },
      { required: ['command'], message: 'ExecAction' },
    ),
  },
  {
    message: 'ReadinessProbe',
    refine: (value, path, problems) => {
      atMostOne(value, PROBE_KINDS, path, problems);
      if (PROBE_KINDS.every((k) => value[k] === undefined))
        problems.error(path, `needs one of ${PROBE_KINDS.join(', ')}`);
    },
  },
);

const groupMetadata = obj(
  { labels: stringMap, annotations: stringMap },
  { message: 'WorkloadGroup.ObjectMeta' },
);

export const workloadGroupSpec: Check<WorkloadGroupSpec> = obj(
  {
    metadata: (value, path, problems) => {
      const meta = groupMetadata(value, path, problems);
      if (meta?.annotations) checkHealthAnnotation(meta.annotations, [...path, 'annotations'], problems);
      return meta;
    },
    template: workloadTemplate,
    probe,
  },
  {
    // Istio: "template is required".
    required: ['template'],
    message: 'WorkloadGroup',
    refine: (group, path, problems) => {
      if (group.template && group.template.serviceAccount === undefined)
        problems.warn(
          [...path, 'template', 'serviceAccount'],
          'not set: a VM registering under any service account of the namespace joins this group, and its identity becomes an accepted server identity of the service; set the one service account the VMs run as',
        );
    },
  },
);
