// PeerAuthentication (security.istio.io): which inbound traffic a workload accepts — mutual TLS only
// (STRICT), both (PERMISSIVE), or plaintext (DISABLE); UNSET inherits from the wider policy.
import type { MtlsMode, PeerAuthenticationSpec } from '../../mesh/types.js';
import { workloadSelector } from './authorization-policy.js';
import { mapOf, obj, oneOf, type Check } from './schema.js';

const MODES: readonly MtlsMode[] = ['UNSET', 'DISABLE', 'PERMISSIVE', 'STRICT'];

const mtls = obj({ mode: oneOf(MODES) }, { message: 'PeerAuthentication.MutualTLS' });

export const peerAuthenticationSpec: Check<PeerAuthenticationSpec> = obj(
  {
    selector: workloadSelector,
    mtls,
    // Istio's schema: at least one port when the field is present.
    portLevelMtls: mapOf(mtls, { nonEmpty: true }),
  },
  {
    message: 'PeerAuthentication',
    refine: (pa, path, problems) => {
      const ports = Object.keys(pa.portLevelMtls ?? {});
      for (const port of ports) {
        const n = Number(port);
        if (!/^\d+$/.test(port) || n < 1 || n > 65535)
          problems.error([...path, 'portLevelMtls', port], 'must be keyed by a port number (1-65535)');
      }
      // Istio ignores port-level settings without a workload selector; refusing says so at once.
      if (ports.length > 0 && !pa.selector)
        problems.error(
          [...path, 'portLevelMtls'],
          'needs a selector (port-level mTLS applies to selected workloads)',
        );
    },
  },
);
