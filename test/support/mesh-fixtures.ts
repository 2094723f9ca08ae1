// Builders for mesh config resources in tests, as the config directory would load them.
import type { DestinationRuleResource, DestinationRuleSpec } from '../../mesh/types.js';

/** A DestinationRule `name` in `namespace`, read from `<name>.yaml`. */
export function destinationRule(
  name: string,
  spec: DestinationRuleSpec,
  namespace = 'default',
): DestinationRuleResource {
  return {
    kind: 'DestinationRule',
    apiVersion: 'networking.istio.io/v1',
    name,
    namespace,
    labels: {},
    annotations: {},
    spec,
    file: `${name}.yaml`,
    line: 1,
  };
}
