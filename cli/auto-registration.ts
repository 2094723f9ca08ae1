// Auto-registration as part of `portolan serve`: the registry of VMs that joined a WorkloadGroup
// through their agent (registration/), fed by the ADS server's seams — the admission check refuses
// an agent that may not join its group, the observer tells it of agent streams coming and going and
// of their health reports — stored in the store, and handed to the config registry, whose
// ServiceEntries select the entries by label.
import { isIP } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import type { ConfigDirRegistry } from '../config-dir/registry.js';
import type { Logger } from '../log/logger.js';
import { AutoRegistration, type AgentClaim } from '../registration/auto-registration.js';
import { HEARTBEAT_MS } from './replication.js';
import { PostgresRegistrations } from '../store/postgres/auto-registrations.js';
import type { PostgresStore } from '../store/postgres/postgres-store.js';
import type { Store } from '../store/store.js';
import type { StreamAdmission } from '../xds/server/ads-server.js';
import type { AdsObserver, StreamView } from '../xds/server/observer.js';
import type { Proxy } from '../xds/proxy/proxy.js';

/** The node metadata an agent started with `--group` sets (Istio's name). */
export const GROUP_META = 'AUTO_REGISTER_GROUP';

export const DEFAULT_GRACE_MS = 10_000;

export interface WiredAutoRegistration {
  readonly registration: AutoRegistration;
  readonly admission: StreamAdmission;
  readonly observer: AdsObserver;
  stop(): void;
}

/** With --store postgres: registrations shared by the replicas (docs/ha.md). */
export interface SharedRegistrationOptions {
  readonly store: PostgresStore;
  readonly replica: string;
  /** Whether this replica leads the singleton jobs (the grace cleanup of dead replicas' rows). */
  readonly leads: () => boolean;
  /** The registrations this replica id held when it last ran (PostgresRegistrations.heldBy). */
  readonly held?: readonly { key: string; value: string }[];
}

/** How often a replica reads the registrations the others hold. */
const SHARED_POLL_MS = 1000;

export function wireAutoRegistration(
  config: ConfigDirRegistry,
  store: Store | undefined,
  graceMs: number,
  logger: Logger,
  shared?: SharedRegistrationOptions,
): WiredAutoRegistration {
  // Shared: in PostgreSQL instead of this replica's SQLite (which keeps its table, unused).
  const sharedRows = shared && new PostgresRegistrations(shared.store, shared.replica, logger, shared.held);
  const registration = new AutoRegistration({
    groups: () => config.meshConfig().workloadGroups ?? [],
    graceMs,
    ...(sharedRows ? { store: sharedRows } : store && { store: store.autoRegistrations }),
    logger,
  });
  registration.restore();
  sharedRows?.watch((rows) => registration.setShared(rows), {
    pollMs: SHARED_POLL_MS,
    graceMs,
    heartbeatMs: HEARTBEAT_MS,
    leads: shared?.leads ?? (() => false),
  });
  const detach = config.addWorkloadEntries(registration);
  const unsubscribe = config.onConfigChange(() => registration.groupsChanged());
  const registering = new Set<string>();
  return {
    registration,
    admission: (stream, proxy) => {
      const claim = claimOf(stream, proxy);
      if (!claim) return undefined;
      const reason = registration.refusal(claim);
      if (!reason) return undefined;
      logger.warn({ node: proxy.id, group: claim.group, reason }, 'auto-registration refused');
      return { code: grpc.status.PERMISSION_DENIED, reason };
    },
    observer: {
      streamIdentified(stream) {
        const claim = stream.proxy && claimOf(stream, stream.proxy);
        if (!claim) return;
        registering.add(stream.id);
        registration.connected(stream.id, claim);
      },
      streamClosed(stream) {
        if (registering.delete(stream.id)) registration.disconnected(stream.id);
      },
      healthReported(stream, report) {
        if (registering.has(stream.id)) registration.reportHealth(stream.id, report.healthy, report.message);
      },
    },
    stop() {
      unsubscribe();
      detach();
      registration.stop();
      void sharedRows?.stop();
    },
  };
}

/** What an agent's stream claims for auto-registration; undefined for any other stream. */
function claimOf(stream: StreamView, proxy: Proxy): AgentClaim | undefined {
  const group = proxy.metadata[GROUP_META];
  if (typeof group !== 'string' || group === '') return undefined;
  const sa = proxy.metadata.SERVICE_ACCOUNT;
  return {
    nodeId: proxy.id,
    group,
    namespace: proxy.namespace,
    serviceAccount: typeof sa === 'string' ? sa : '',
    identity: stream.peerIdentity,
    address: proxy.ips[0] ?? peerAddress(stream.peer),
  };
}

/** The IP of a gRPC peer string: `1.2.3.4:5678`, `[::1]:5678`, `ipv4:…`, IPv4-mapped IPv6 unwrapped. */
export function peerAddress(peer: string): string {
  let host = peer.replace(/^ipv[46]:/, '');
  const bracket = /^\[([^\]]+)\](?::\d+)?$/.exec(host);
  if (bracket?.[1]) host = bracket[1];
  else if (isIP(host) === 0) host = host.replace(/:\d+$/, '');
  if (host.startsWith('::ffff:') && isIP(host.slice(7)) === 4) host = host.slice(7);
  return host;
}
