// Inbound mTLS for an Envoy sidecar, per PeerAuthentication mode (xds/traffic/peer-authentication.ts):
// STRICT — the port's chain terminates TLS and requires a client certificate from our trust bundle with
// a SPIFFE URI in our trust domain; PERMISSIVE — a TLS chain (selected by tls_inspector's "tls") and a
// plaintext one ("raw_buffer"); DISABLE — plaintext only. The certificate and the bundle are the SDS
// secrets `default` and `ROOTCA` read from the node's certificate directory (mesh/workload-certs.ts).
import type { FilterChain } from '../../generated/envoy/config/listener/v3/FilterChain.js';
import type { ListenerFilter } from '../../generated/envoy/config/listener/v3/ListenerFilter.js';
import type { CommonTlsContext } from '../../generated/envoy/extensions/transport_sockets/tls/v3/CommonTlsContext.js';
import type { SubjectAltNameMatcher } from '../../generated/envoy/extensions/transport_sockets/tls/v3/SubjectAltNameMatcher.js';
import type { DownstreamTlsContext } from '../../generated/envoy/extensions/transport_sockets/tls/v3/DownstreamTlsContext.js';
import type { MeshConfig } from '../../../mesh/mesh-config.js';
import { toAny } from '../../proto/resource.js';
import { mtlsModeFor, type EffectiveMtls, type Workload } from '../../traffic/peer-authentication.js';
import {
  CERT_SECRET,
  DEFAULT_TRUST_DOMAIN,
  ROOT_SECRET,
  type SecretSource,
} from '../../../mesh/workload-certs.js';
import { sdsSecretConfig } from '../sds-config.js';
import { DOWNSTREAM_TLS_TYPE, tlsInspectorFilter } from './filters.js';

/** What the listener builders need: the chains for one inbound port, and the listener filters. */
export interface InboundSecurity {
  /** `chain` as served for `port`: itself, one TLS chain, or a TLS and a plaintext chain. */
  chains(chain: FilterChain, port: number, http: boolean): FilterChain[];
  /** tls_inspector when some port is PERMISSIVE (its chains are told apart by transport protocol). */
  listenerFilters(ports: readonly number[]): ListenerFilter[];
}

export interface InboundTlsInputs {
  readonly config: MeshConfig;
  readonly workload: Workload;
  readonly secrets: SecretSource;
  readonly trustDomain?: string;
}

/** No mTLS: the chains as they are (a proxy with no config directory, or tests). */
export const PLAINTEXT_INBOUND: InboundSecurity = { chains: (c) => [c], listenerFilters: () => [] };

export function inboundSecurity(inputs: InboundTlsInputs): InboundSecurity {
  // No policy at all: plaintext (see xds/traffic/peer-authentication.ts).
  const mode = (port: number): EffectiveMtls =>
    mtlsModeFor(inputs.config, inputs.workload, port) ?? 'DISABLE';
  const trustDomain = inputs.trustDomain ?? DEFAULT_TRUST_DOMAIN;
  return {
    chains(chain, port, http) {
      const m = mode(port);
      if (m === 'DISABLE') return [chain];
      const tls: FilterChain = {
        ...chain,
        transport_socket: {
          name: 'envoy.transport_sockets.tls',
          typed_config: toAny(DOWNSTREAM_TLS_TYPE, downstreamTlsContext(inputs.secrets, trustDomain, http)),
        },
      };
      if (m === 'STRICT') return [tls];
      const match = chain.filter_chain_match ?? {};
      return [
        { ...tls, filter_chain_match: { ...match, transport_protocol: 'tls' } },
        {
          ...chain,
          name: `${chain.name ?? ''}-plaintext`,
          filter_chain_match: { ...match, transport_protocol: 'raw_buffer' },
        },
      ];
    },
    listenerFilters(ports) {
      return ports.some((p) => mode(p) === 'PERMISSIVE') ? [tlsInspectorFilter()] : [];
    },
  };
}

/** Terminates mTLS: our certificate, and a client certificate from our roots naming our trust domain. */
export function downstreamTlsContext(
  secrets: SecretSource,
  trustDomain: string,
  http: boolean,
): DownstreamTlsContext {
  return {
    require_client_certificate: { value: true },
    common_tls_context: workloadTlsContext(secrets, trustDomain, http ? ['h2', 'http/1.1'] : []),
  };
}

/** The workload certificate plus peer validation against the bundle and a SPIFFE URI SAN prefix. */
export function workloadTlsContext(
  secrets: SecretSource,
  trustDomain: string,
  alpn: readonly string[],
  sanMatchers: readonly SubjectAltNameMatcher[] = [
    { san_type: 'URI', matcher: { prefix: `spiffe://${trustDomain}/` } },
  ],
): CommonTlsContext {
  return {
    tls_certificate_sds_secret_configs: [sdsSecretConfig(secrets, CERT_SECRET)],
    combined_validation_context: {
      default_validation_context: { match_typed_subject_alt_names: [...sanMatchers] },
      validation_context_sds_secret_config: sdsSecretConfig(secrets, ROOT_SECRET),
    },
    ...(alpn.length > 0 && { alpn_protocols: [...alpn] }),
  };
}
