// Gateway: the servers (port, protocol, hosts, TLS) an edge proxy listens with. TLS material is
// read from files on the gateway's machine; `credentialName` names a Kubernetes secret, which
// Portolan has no way to read, so it is refused with a pointer to the file fields.
import type { GatewaySpec } from '../../mesh/types.js';
import { isHostOrWildcard, portNumber, protocol, stringMap } from './common.js';
import { arrayOf, bool, obj, oneOf, str, type Check } from './schema.js';

const TLS_VERSIONS = ['TLS_AUTO', 'TLSV1_0', 'TLSV1_1', 'TLSV1_2', 'TLSV1_3'] as const;

/** `host`, `*.suffix` or `*`, optionally after `namespace/` (`./` is the Gateway's own namespace). */
const serverHost = str({
  test: (s) => {
    const slash = s.indexOf('/');
    const host = slash < 0 ? s : s.slice(slash + 1);
    const ns = slash < 0 ? undefined : s.slice(0, slash);
    if (ns !== undefined && ns !== '.' && ns !== '*' && !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(ns))
      return `namespace part must be ".", "*" or a namespace name, got ${JSON.stringify(ns)}`;
    return isHostOrWildcard(host) ? undefined : `must be a hostname or wildcard, got ${JSON.stringify(host)}`;
  },
});

const serverTls = obj(
  {
    httpsRedirect: bool,
    mode: oneOf(['PASSTHROUGH', 'SIMPLE', 'MUTUAL', 'AUTO_PASSTHROUGH', 'ISTIO_MUTUAL', 'OPTIONAL_MUTUAL']),
    serverCertificate: str({ nonEmpty: true }),
    privateKey: str({ nonEmpty: true }),
    caCertificates: str({ nonEmpty: true }),
    credentialName: str(),
    subjectAltNames: arrayOf(str({ nonEmpty: true })),
    minProtocolVersion: oneOf(TLS_VERSIONS),
    maxProtocolVersion: oneOf(TLS_VERSIONS),
    cipherSuites: arrayOf(str({ nonEmpty: true })),
  },
  {
    message: 'ServerTLSSettings',
    refine: (tls, path, problems) => {
      if (tls.credentialName !== undefined)
        problems.error(
          [...path, 'credentialName'],
          'Kubernetes secrets are not available outside Kubernetes; use serverCertificate and privateKey (file paths)',
        );
      const terminates = tls.mode === 'SIMPLE' || tls.mode === 'MUTUAL' || tls.mode === 'OPTIONAL_MUTUAL';
      if (terminates) {
        for (const field of ['serverCertificate', 'privateKey'] as const)
          if (tls[field] === undefined) problems.error([...path, field], `is required for mode ${tls.mode}`);
      }
      if ((tls.mode === 'MUTUAL' || tls.mode === 'OPTIONAL_MUTUAL') && tls.caCertificates === undefined)
        problems.error([...path, 'caCertificates'], `is required for mode ${tls.mode}`);
    },
  },
);

const server = obj(
  {
    port: obj(
      { number: portNumber, protocol, name: str({ nonEmpty: true }), targetPort: portNumber },
      {
        required: ['number', 'protocol'],
        message: 'Port',
        // Istio refuses a server port without a name; Portolan, which never needed it, warns.
        refine: (port, path, problems) => {
          if (port.name === undefined && !problems.errors.some((e) => e.path.at(-1) === 'name'))
            problems.warn([...path, 'name'], 'not set: Istio requires a port name (and refuses the Gateway)');
        },
      },
    ),
    hosts: arrayOf(serverHost, { nonEmpty: true }),
    tls: serverTls,
    bind: str(),
    defaultEndpoint: str(),
    name: str(),
  },
  {
    required: ['port', 'hosts'],
    message: 'Server',
    refine: (s, path, problems) => {
      const p = s.port?.protocol;
      if ((p === 'HTTPS' || p === 'TLS') && s.tls === undefined)
        problems.error([...path, 'tls'], `is required for protocol ${p}`);
    },
  },
);

export const gatewaySpec: Check<GatewaySpec> = obj(
  { selector: stringMap, servers: arrayOf(server, { nonEmpty: true }) },
  {
    required: ['servers'],
    message: 'Gateway',
    refine: (g, path, problems) => {
      // Istio: "port names in servers must be unique".
      const names = new Map<string, number>();
      g.servers?.forEach((s, i) => {
        const name = s.port?.name;
        if (name === undefined) return;
        const first = names.get(name);
        if (first !== undefined)
          problems.error(
            [...path, 'servers', i, 'port', 'name'],
            `duplicate port name ${JSON.stringify(name)}: servers[${first}] has it (port names in servers must be unique)`,
          );
        else names.set(name, i);
      });
      // Two servers on one port with the same protocol need distinct hosts (Envoy would reject the chains).
      const seen = new Map<string, number>();
      g.servers?.forEach((s, i) => {
        if (!s.port || !s.hosts) return;
        for (const host of s.hosts) {
          const key = `${s.port.number} ${host}`;
          const first = seen.get(key);
          if (first !== undefined)
            problems.error(
              [...path, 'servers', i, 'hosts'],
              `host ${JSON.stringify(host)} on port ${s.port.number} is already served by servers[${first}]`,
            );
          else seen.set(key, i);
        }
      });
    },
  },
);
