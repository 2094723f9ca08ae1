// What an agent registered into a WorkloadGroup subscribes to (`portolan agent --group`): the
// group's readiness probe, by the name NAMESPACE/GROUP. It depends on the config alone.
import type { ProxyKind } from '../../proxy/proxy.js';
import { encodeResource } from '../../proto/resource.js';
import { WORKLOAD_REGISTRATION } from '../../proto/type-urls.js';
import type { ResourceGenerator } from '../generator.js';

export function registrationGenerator(proxyKind: ProxyKind): ResourceGenerator {
  return {
    typeUrl: WORKLOAD_REGISTRATION,
    proxyKind,
    viewKey: () => '',
    wildcardNames: () => [],
    build(ctx, name) {
      const slash = name.indexOf('/');
      const [namespace, group] = [name.slice(0, slash), name.slice(slash + 1)];
      const found = ctx.config.workloadGroups?.find((g) => g.namespace === namespace && g.name === group);
      if (slash < 0 || !found) return undefined;
      const probe = found.spec.probe;
      return encodeResource(WORKLOAD_REGISTRATION, name, {
        name,
        probe_json: probe ? JSON.stringify(probe) : '',
      });
    },
  };
}
