// `portolan proxy-status [PROXY_ID]`: is every proxy in sync? One line per connected proxy (from the
// running server's /debug/syncz), or one proxy's detail with every NACK's message. Exits 1 when any
// proxy listed is NACKing, so a deploy script can gate on it.
import type { ProxySync, SynczView, TypeSync } from '../admin/syncz.js';
import { AdminError, getJson } from './admin-client.js';
import { formatTable, humanDuration } from './table.js';

const TYPES = ['CDS', 'LDS', 'EDS', 'RDS'] as const;

/** The node id prefix of an agent's own stream (cli/agent.ts, agentNodeId). */
const AGENT_NODE_PREFIX = 'agent/';

const PROXY_TYPES: Readonly<Record<string, string>> = {
  grpc: 'gRPC',
  sidecar: 'Envoy sidecar',
  gateway: 'gateway',
};

export interface ProxyStatusResult {
  readonly output: string;
  /** 1 when a proxy is NACKing, else 0. */
  readonly exitCode: number;
}

export async function proxyStatus(
  httpAddr: string,
  proxyId: string | undefined,
  format: 'table' | 'json',
): Promise<ProxyStatusResult> {
  const query = proxyId === undefined ? '' : `?proxyID=${encodeURIComponent(proxyId)}`;
  const view = await getJson<SynczView>(httpAddr, `/debug/syncz${query}`);
  const exitCode = view.proxies.some((p) => p.state === 'NACK') ? 1 : 0;
  if (format === 'json') {
    const body = proxyId === undefined ? view : view.proxies.length === 1 ? view.proxies[0] : view;
    return { output: `${JSON.stringify(body, null, 2)}\n`, exitCode };
  }
  const now = Date.now();
  const output =
    proxyId === undefined
      ? statusTable(view.proxies, now) + (await replicasTable(httpAddr, now))
      : view.proxies.map((p) => detail(p, now)).join('\n');
  return { output, exitCode };
}

interface ReplicasView {
  readonly replica: string;
  readonly leader: boolean;
  readonly store: { readonly kind: string; readonly state: string };
  readonly replicas: readonly { replica: string; heartbeatAt: string; proxies: readonly string[] }[];
}

/** With several replicas (--store): which one answered, and every replica's heartbeat and proxies. */
async function replicasTable(httpAddr: string, now: number): Promise<string> {
  let view: ReplicasView;
  try {
    view = await getJson<ReplicasView>(httpAddr, '/debug/replicas');
  } catch (err) {
    if (err instanceof AdminError) return ''; // one replica (404), or an older serve
    throw err;
  }
  return (
    `\nreplica ${view.replica}${view.leader ? ' (leader)' : ''}, shared store ${view.store.kind} ${view.store.state}\n` +
    formatTable(
      ['REPLICA', 'LAST HEARTBEAT', 'PROXIES'],
      view.replicas.map((r) => [
        r.replica,
        `${humanDuration(now - Date.parse(r.heartbeatAt))} ago`,
        r.proxies.join(',') || '-',
      ]),
    )
  );
}

export function statusTable(proxies: readonly ProxySync[], now: number): string {
  if (proxies.length === 0) return 'no proxies connected\n';
  return formatTable(
    ['NAME', 'KIND', 'API', ...TYPES, 'CONNECTED'],
    proxies.map((p) => [
      p.node,
      kindLabel(p),
      apiLabel(p.api),
      ...TYPES.map((t) => stateLabel(p.types[t])),
      `${humanDuration(now - Date.parse(p.connectedAt))} ago`,
    ]),
  );
}

export function stateLabel(t: TypeSync | undefined): string {
  if (!t) return '-';
  return t.state === 'STALE' && t.sinceSentMs !== null ? `STALE (${humanDuration(t.sinceSentMs)})` : t.state;
}

function detail(p: ProxySync, now: number): string {
  const head = [
    ['Proxy', p.node],
    ['Kind', `${kindLabel(p)}, ${apiLabel(p.api)}`],
    ['Peer', p.peer],
    ['Connection', p.connection],
    ['Connected', `${p.connectedAt} (${humanDuration(now - Date.parse(p.connectedAt))} ago)`],
    ['State', p.state],
  ]
    .map(([k, v]) => `${(k ?? '').padEnd(11)} ${v ?? ''}\n`)
    .join('');
  const types = Object.entries(p.types);
  const table = formatTable(
    ['TYPE', 'STATE', 'SENT', 'SENT AT', 'ACKED', 'ACKED AT'],
    types.map(([name, t]) => [
      name,
      stateLabel(t),
      t.sentVersion === null ? '-' : `${short(t.sentVersion)} (nonce ${t.sentNonce ?? ''})`,
      t.sentAt ?? '-',
      t.ackedVersion === null ? '-' : `${short(t.ackedVersion)} (nonce ${t.ackedNonce ?? ''})`,
      t.ackedAt ?? '-',
    ]),
  );
  const nacks = types.flatMap(([name, t]) =>
    t.lastNack
      ? [
          `  ${name} rejected ${short(t.lastNack.version)} (nonce ${t.lastNack.nonce}) at ${t.lastNack.at}` +
            `${t.state === 'NACK' ? '' : ' (since replaced)'}: code ${t.lastNack.code}: ${t.lastNack.message}\n`,
        ]
      : [],
  );
  return `${head}\n${table}${nacks.length ? `\nNACKs\n${nacks.join('')}` : ''}`;
}

/**
 * A `portolan agent`'s own control stream (node id agent/NAME: registration, probes, DNS names) is
 * not a proxy and subscribes to none of CDS/LDS/EDS/RDS; named as the agent, it does not read as a
 * proxy stuck with nothing sent.
 */
export function kindLabel(p: ProxySync): string {
  if (p.node.startsWith(AGENT_NODE_PREFIX)) return 'portolan agent (own stream)';
  return PROXY_TYPES[p.proxyType] ?? p.proxyType;
}

function apiLabel(api: string): string {
  return api === 'sotw' ? 'SotW' : api;
}

// Content-hash versions are long; the head identifies them.
function short(version: string): string {
  return version.length > 12 ? version.slice(0, 12) : version;
}
