// The other half of PORTOLAN_VALIDATE_PUSHES: after each push, the full set every connected Envoy
// view would hold is checked for dangling references (an RDS name no route configuration answers,
// a cluster no CDS entry defines, an EDS cluster without endpoints) — go-control-plane's snapshot
// consistency check. Violations are logged; what is sent is unchanged. One check per distinct view.
import type { Logger } from '../../log/logger.js';
import type { GenerateContext, GeneratorLookup } from '../generators/generator.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../proto/type-urls.js';
import { checkConsistency } from './consistency.js';
import { envoyResourceSet } from './envoy-resource-set.js';

const ENVOY_TYPES = [CLUSTER, ENDPOINT, LISTENER, ROUTE];

/** Checks each distinct Envoy view among `contexts`; returns how many views had violations. */
export function checkPushConsistency(
  generators: GeneratorLookup,
  contexts: Iterable<GenerateContext>,
  logger: Logger,
): number {
  const seen = new Set<string>();
  let failed = 0;
  for (const ctx of contexts) {
    if (ctx.proxy.kind !== 'envoy') continue;
    const key = ENVOY_TYPES.map((t) => generators.find('envoy', t)?.viewKey(ctx.proxy, ctx) ?? '').join('\0');
    if (seen.has(key)) continue;
    seen.add(key);
    const violations = checkConsistency(envoyResourceSet(generators, ctx));
    if (violations.length === 0) continue;
    failed += 1;
    logger.error(
      { node: ctx.proxy.id, proxy: ctx.proxy.id, violations: violations.slice(0, 20) },
      'pushed Envoy config references resources it does not define',
    );
  }
  return failed;
}
