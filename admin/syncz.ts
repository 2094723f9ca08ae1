// GET /debug/syncz: per connected proxy and type, the last response sent (version, nonce, when), the
// last one ACKed, the NACK in force, and the sync state istioctl's proxy-status prints:
//   SYNCED    the client ACKed the last response sent
//   NOT SENT  it subscribes, and nothing was sent yet
//   STALE     a response was sent and is not answered yet (sinceSentMs says for how long)
//   NACK      the client rejected the last response sent
// `portolan proxy-status` and the dashboard read this view; the state is decided here, once.
import type { StreamView, TypeStatus } from '../xds/server/observer.js';
import { PUSH_ORDER, shortTypeName } from '../xds/proto/type-urls.js';
import type { ProxySync, SyncState, SynczView, TypeSync } from '../model/admin-api.js';

export type { ProxySync, ProxyType, SyncState, SynczView, TypeSync } from '../model/admin-api.js';

const SEVERITY: readonly SyncState[] = ['SYNCED', 'NOT SENT', 'STALE', 'NACK'];

export function syncz(streams: readonly StreamView[], proxyId?: string, now = Date.now()): SynczView {
  const proxies: ProxySync[] = [];
  for (const stream of streams) {
    const proxy = stream.proxy;
    if (!proxy || (proxyId !== undefined && proxy.id !== proxyId)) continue;
    proxies.push(proxySync(stream, now));
  }
  proxies.sort((a, b) =>
    a.node === b.node ? a.connection.localeCompare(b.connection) : a.node < b.node ? -1 : 1,
  );
  return { proxies };
}

export function proxySync(stream: StreamView, now = Date.now()): ProxySync {
  const proxy = stream.proxy;
  const types: Record<string, TypeSync> = {};
  const statuses = [...stream.typeStatus()].sort((a, b) => order(a.typeUrl) - order(b.typeUrl));
  let worst = 0;
  for (const t of statuses) {
    const sync = typeSync(t, now);
    types[shortTypeName(t.typeUrl)] = sync;
    worst = Math.max(worst, SEVERITY.indexOf(sync.state));
  }
  return {
    node: proxy?.id ?? '',
    connection: stream.id,
    kind: proxy?.kind ?? 'unknown',
    proxyType: proxy?.kind === 'envoy' ? (proxy.envoy?.role === 'router' ? 'gateway' : 'sidecar') : 'grpc',
    api: stream.api,
    peer: stream.peer,
    connectedAt: stream.connectedAt,
    state: SEVERITY[worst] ?? 'SYNCED',
    types,
  };
}

export function typeSync(t: TypeStatus, now = Date.now()): TypeSync {
  const sent = t.sentNonce !== '';
  const nacked = sent && t.nack !== undefined && t.nack.nonce === t.sentNonce;
  const acked = sent && t.acked !== undefined && t.acked.nonce === t.sentNonce;
  const state: SyncState = !sent ? 'NOT SENT' : nacked ? 'NACK' : acked ? 'SYNCED' : 'STALE';
  return {
    state,
    sentVersion: sent ? t.sentVersion : null,
    sentNonce: sent ? t.sentNonce : null,
    sentAt: t.sentAt ?? null,
    ackedVersion: t.acked?.version ?? null,
    ackedNonce: t.acked?.nonce ?? null,
    ackedAt: t.acked?.at ?? null,
    sinceSentMs: state === 'STALE' && t.sentAt ? Math.max(0, now - Date.parse(t.sentAt)) : null,
    lastNack: t.nack ?? null,
  };
}

function order(typeUrl: string): number {
  const i = PUSH_ORDER.indexOf(typeUrl);
  return i < 0 ? PUSH_ORDER.length : i;
}
