// JSON views for /debug/registryz and /debug/adsz, built from the live objects on each request.
import type { AggregateDiscovery } from '../aggregate/aggregate-discovery.js';
import type { RegistrationView } from '../registration/auto-registration.js';
import type { AdsServer } from '../xds/server/ads-server.js';
import { clientProfile } from '../xds/proxy/client-capabilities.js';
import type { Proxy } from '../xds/proxy/proxy.js';
import { shortTypeName } from '../xds/proto/type-urls.js';

export function registryz(
  discovery: AggregateDiscovery,
  autoRegistration?: { list(): readonly RegistrationView[] },
): unknown {
  return {
    synced: discovery.hasSynced(),
    registries: discovery.registries.map((r) => {
      const snap = r.snapshot();
      return {
        name: r.name,
        status: r.status(),
        ...(r.debug && { debug: r.debug() }),
        services: [...snap.services.values()].map((s) => ({
          ...s,
          endpoints: snap.endpoints.get(s.hostname) ?? [],
        })),
      };
    }),
    conflicts: discovery.conflicts(),
    // VMs registered through their agent (WorkloadGroup): node, connection state, probe health.
    ...(autoRegistration && { autoRegistered: autoRegistration.list() }),
  };
}

export function adsz(ads: AdsServer): unknown {
  return {
    pushes: ads.pushes,
    clients: ads.connectionList().map((c) => ({
      connection: c.id,
      node: c.proxy?.id ?? null,
      kind: c.proxy?.kind ?? null,
      userAgent: c.proxy?.userAgent ?? null,
      userAgentVersion: c.proxy?.userAgentVersion ?? null,
      clientRules: clientRules(c.proxy),
      peer: c.peer,
      identity: c.peerIdentity ?? null,
      connectedAt: c.connectedAt,
      subscriptions: Object.fromEntries(
        c.state.watchedTypes().map((typeUrl) => {
          const s = c.state.typeState(typeUrl);
          return [
            shortTypeName(typeUrl),
            {
              wildcard: s?.wildcard ?? false,
              names: [...(s?.names ?? [])],
              sent: s?.sent ?? null,
              ackedVersion: s?.ackedVersion ?? null,
              ackedAt: s?.ackedAt ?? null,
              lastNack: s?.nack ?? null,
              nacks: s?.nackCount ?? 0,
            },
          ];
        }),
      ),
    })),
    deltaClients: ads.deltaConnectionList().map((c) => ({
      connection: c.id,
      node: c.proxy?.id ?? null,
      kind: c.proxy?.kind ?? null,
      userAgent: c.proxy?.userAgent ?? null,
      userAgentVersion: c.proxy?.userAgentVersion ?? null,
      clientRules: clientRules(c.proxy),
      peer: c.peer,
      identity: c.peerIdentity ?? null,
      connectedAt: c.connectedAt,
      subscriptions: Object.fromEntries(
        c.state.watchedTypes().map((typeUrl) => {
          const s = c.state.type(typeUrl);
          return [
            shortTypeName(typeUrl),
            {
              wildcard: s?.wildcard ?? false,
              names: [...(s?.names ?? [])],
              held: s?.known.size ?? 0,
              lastNonce: s?.lastNonce ?? null,
              ackedNonce: s?.ackedNonce ?? null,
              lastNack: s?.nack ?? null,
              nacks: s?.nackCount ?? 0,
            },
          ];
        }),
      ),
    })),
  };
}

/** The client-capability rules this proxy is rendered by (xds/proxy/client-capabilities.ts). */
function clientRules(proxy: Proxy | undefined): unknown[] {
  if (!proxy) return [];
  return clientProfile(proxy).rules.map((r) => ({
    id: r.id,
    clients: r.clients,
    rendering: r.rendering,
    reason: r.reason,
    reference: r.reference,
    // The types whose resources this client is not sent when they break the rule (withheld).
    ...(r.rejects && { withholds: [...new Set(r.rejects.map((c) => shortTypeName(c.typeUrl)))] }),
  }));
}
