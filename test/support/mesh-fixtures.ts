// Builders for mesh config resources in tests, as the config directory would load them.
import type {
  ConfigKind,
  ConfigResource,
  DestinationRuleResource,
  DestinationRuleSpec,
} from '../../mesh/types.js';

/** A resource of `kind` named `name` in `namespace`, read from line 1 of `file`. */
export function configResource<K extends ConfigKind, T>(
  kind: K,
  name: string,
  spec: T,
  namespace = 'default',
  file = `${name}.yaml`,
): ConfigResource<T, K> {
  return {
    kind,
    apiVersion: 'networking.istio.io/v1',
    name,
    namespace,
    labels: {},
    annotations: {},
    spec,
    file,
    line: 1,
  };
}

/** A DestinationRule `name` in `namespace`, read from `<name>.yaml`. */
export function destinationRule(
  name: string,
  spec: DestinationRuleSpec,
  namespace = 'default',
): DestinationRuleResource {
  return configResource('DestinationRule', name, spec, namespace);
}
