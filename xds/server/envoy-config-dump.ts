// What an Envoy was last sent, in the shape of Envoy's own admin /config_dump (envoy.admin.v3.ConfigDump
// with Clusters/Endpoints/Listeners/RoutesConfigDump entries), so tools that read Envoy dumps read it.
// Messages are in proto JSON field names (snake_case) with `@type` on every Any.
import type { StreamView } from './observer.js';
import { decodeAny } from '../proto/protos.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../proto/type-urls.js';

const ADMIN = 'type.googleapis.com/envoy.admin.v3.';

export function envoyConfigDump(stream: StreamView): { configs: Record<string, unknown>[] } {
  const status = new Map(stream.typeStatus().map((t) => [t.typeUrl, t]));
  const sent = (typeUrl: string): { version: string; at: string; resources: Record<string, unknown>[] } => {
    const t = status.get(typeUrl);
    return {
      version: t?.sentVersion ?? '',
      at: t?.sentAt ?? stream.connectedAt,
      resources: stream.heldResources(typeUrl).map((r) => decodeAny(r.typeUrl, r.value)),
    };
  };
  const clusters = sent(CLUSTER);
  const endpoints = sent(ENDPOINT);
  const listeners = sent(LISTENER);
  const routes = sent(ROUTE);
  return {
    configs: [
      {
        '@type': `${ADMIN}ClustersConfigDump`,
        version_info: clusters.version,
        dynamic_active_clusters: clusters.resources.map((cluster) => ({
          version_info: clusters.version,
          cluster,
          last_updated: clusters.at,
        })),
      },
      {
        '@type': `${ADMIN}EndpointsConfigDump`,
        dynamic_endpoint_configs: endpoints.resources.map((endpoint_config) => ({
          version_info: endpoints.version,
          endpoint_config,
          last_updated: endpoints.at,
        })),
      },
      {
        '@type': `${ADMIN}ListenersConfigDump`,
        version_info: listeners.version,
        dynamic_listeners: listeners.resources.map((listener) => ({
          name: listener.name,
          active_state: { version_info: listeners.version, listener, last_updated: listeners.at },
        })),
      },
      {
        '@type': `${ADMIN}RoutesConfigDump`,
        dynamic_route_configs: routes.resources.map((route_config) => ({
          version_info: routes.version,
          route_config,
          last_updated: routes.at,
        })),
      },
    ],
  };
}
