// What an abusive client costs the control plane (issue #17): `portolan serve --registries mock`
// as a child process with 1,000 services, then
//   1. cache flooding: five CDS requests naming clusters that do not exist — the issue's ~10 MiB
//      requests of 200,000 names, the largest request the server accepts (just under 4 MiB), and
//      the most names it accepts (10,000 per type) — with the server's RSS, /ready's worst latency
//      during the flood, and the next push's time (a new service reaching a gRPC client that asked
//      for it by name and an Envoy that watches every cluster) before and after;
//   2. streams held on the secure port by a client that presents no certificate;
//   3. the server's RSS with 200 Envoy streams that never read their ~0.5 MB CDS response.
// Numbers go in docs/benchmarks.md ("Abuse: floods and stuck streams"). `FLOOD_VARIANTS=0` runs only
// the issue's flood; to measure another build, run this file from a copy of that build's dist/.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import { startPortolanProcess, type PortolanProcess } from '../test/support/portolan-process.js';
import { ADS_PATH, RawAdsClient, resourceNames } from '../test/support/raw-ads-client.js';
import { CLUSTER } from '../xds/proto/type-urls.js';
import { encodeDiscoveryRequest } from '../xds/proto/wire.js';
import { printTable } from './table.js';

const SERVICES = 1000;
const FLOOD_STREAMS = 5;
const STUCK_STREAMS = 200;
const UNAUTHENTICATED_STREAMS = 2000;
const MIB = 1024 * 1024;
const MAIN = fileURLToPath(new URL('../cli/main.js', import.meta.url));

const host = (i: number): string => `svc-${i}.bench.internal`;
const probe = (i: number): string => `probe-${i}.bench.internal`;
const cluster = (h: string): string => `outbound|7070||${h}`;
/** About 53 bytes on the wire, as in the issue: 200,000 of them make a ~10 MiB request. */
const missing = (stream: number, i: number): string =>
  cluster(`nonexistent-${stream}-${String(i).padStart(7, '0')}.flood.example.internal`);

function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) * 1024;
}

const mib = (bytes: number): string => `${(bytes / MIB).toFixed(0)} MiB`;

async function put(base: string, path: string, body: unknown): Promise<void> {
  const res = await fetch(`${base}${path}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`PUT ${path}: ${res.status} ${await res.text()}`);
}

async function putService(base: string, h: string, i: number): Promise<void> {
  await put(base, `/mock/services/${h}`, { ports: [{ name: 'grpc', number: 7070, protocol: 'GRPC' }] });
  await put(base, `/mock/services/${h}/endpoints`, [
    { address: `11.${Math.floor(i / 250)}.${i % 250}.1`, ports: { grpc: 9000 } },
  ]);
}

async function populate(base: string): Promise<void> {
  const work = Array.from({ length: SERVICES }, (_, i) => i);
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let i = work.shift(); i !== undefined; i = work.shift()) await putService(base, host(i), i);
    }),
  );
}

async function metric(base: string, name: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return Number(m?.[1] ?? NaN);
}

const GRPC_NODE = (id: string): object => ({ id, cluster: 'bench', user_agent_name: 'gRPC Node bench' });
const ENVOY_NODE = (id: string): object => ({
  id: `sidecar~10.9.0.1~${id}~default.svc.cluster.local`,
  cluster: 'bench',
  user_agent_name: 'envoy',
});

/** A gRPC client watching the probe clusters by name, and an Envoy watching every cluster. */
class Watchers {
  readonly grpcClient: RawAdsClient;
  readonly envoy: RawAdsClient;
  private readonly probes: string[] = [];

  constructor(xds: string) {
    this.grpcClient = new RawAdsClient(xds);
    this.envoy = new RawAdsClient(xds);
  }

  async start(): Promise<void> {
    this.envoy.send({ node: ENVOY_NODE('watcher'), type_url: CLUSTER, resource_names: [] });
    const first = await this.envoy.next(30_000);
    this.envoy.ack(first);
    for (let i = 0; i < 3; i++) this.probes.push(cluster(probe(i)));
    this.grpcClient.send({ node: GRPC_NODE('watcher'), type_url: CLUSTER, resource_names: this.probes });
    this.grpcClient.ack(await this.grpcClient.next(30_000), this.probes);
  }

  /** Adds probe service `i`; resolves with the ms until both watchers hold its cluster. */
  async push(base: string, i: number): Promise<number> {
    const started = performance.now();
    await putService(base, probe(i), 900 + i);
    const want = cluster(probe(i));
    const until = async (client: RawAdsClient, names: string[]): Promise<void> => {
      for (;;) {
        const res = await client.next(60_000);
        client.ack(res, names);
        if (resourceNames(res).includes(want)) return;
      }
    };
    await Promise.all([until(this.grpcClient, this.probes), until(this.envoy, [])]);
    return performance.now() - started;
  }

  close(): void {
    this.grpcClient.close();
    this.envoy.close();
  }
}

/** Polls /ready every 10 ms; the worst latency seen. */
function readyPoller(base: string): { stop: () => Promise<number>; errors: string[] } {
  const errors: string[] = [];
  let worst = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const t = performance.now();
      try {
        await fetch(`${base}/ready`).then((r) => r.text());
      } catch (err) {
        errors.push(String((err as Error).cause ?? err));
      }
      worst = Math.max(worst, performance.now() - t);
      await sleep(10);
    }
  })();
  return {
    errors,
    stop: async () => {
      running = false;
      await loop;
      return worst;
    },
  };
}

interface FloodVariant {
  readonly name: string;
  readonly names: number;
}

const VARIANTS: readonly FloodVariant[] = [
  { name: '5 × ~10 MiB, 200,000 names each (the issue)', names: 200_000 },
  { name: '5 × just under 4 MiB (the largest request accepted), 68,000 names each', names: 68_000 },
  { name: '5 × 10,000 names (the most names accepted per type)', names: 10_000 },
];

/** `FLOOD_VARIANTS=0` runs only the issue's flood (e.g. against an older build); default all. */
function chosenVariants(): readonly FloodVariant[] {
  const only = process.env.FLOOD_VARIANTS;
  if (!only) return VARIANTS;
  return only.split(',').map((i) => {
    const v = VARIANTS[Number(i)];
    if (!v) throw new Error(`FLOOD_VARIANTS: no variant ${i} (0-${VARIANTS.length - 1})`);
    return v;
  });
}

const identity = (b: Buffer): Buffer => b;

/** Sends one flood request per stream; resolves with each stream's outcome and the streams to close. */
async function flood(
  xds: string,
  names: number,
): Promise<{ outcomes: string[]; bytes: number; close: () => void }> {
  const client = new grpc.Client(xds, grpc.credentials.createInsecure(), {
    'grpc.max_send_message_length': -1,
  });
  const calls: grpc.ClientDuplexStream<Buffer, Buffer>[] = [];
  let bytes = 0;
  const outcomes = await Promise.all(
    Array.from({ length: FLOOD_STREAMS }, (_, s) => {
      const call = client.makeBidiStreamRequest(ADS_PATH, identity, identity);
      calls.push(call);
      const req = encodeDiscoveryRequest({
        node: GRPC_NODE(`flood-${s}`),
        type_url: CLUSTER,
        resource_names: Array.from({ length: names }, (_, i) => missing(s, i)),
      });
      bytes = req.length;
      return new Promise<string>((resolve) => {
        const timer = setTimeout(() => resolve('no answer within 60 s'), 60_000);
        call.on('data', () => {
          clearTimeout(timer);
          resolve('answered');
        });
        call.on('status', (st: grpc.StatusObject) => {
          clearTimeout(timer);
          resolve(`${grpc.status[st.code]}: ${st.details.slice(0, 80)}`);
        });
        call.on('error', () => {});
        call.write(req);
      });
    }),
  );
  return {
    outcomes,
    bytes,
    close: () => {
      for (const c of calls) c.cancel();
      client.close();
    },
  };
}

async function withServer<T>(run: (p: PortolanProcess, dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-flood-'));
  const p = await startPortolanProcess(['--registries', 'mock', '--data-dir', join(dir, 'data')], {
    timeoutMs: 60_000,
  });
  try {
    await populate(p.httpBase);
    return await run(p, dir);
  } finally {
    await p.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function cacheFlood(v: FloodVariant): Promise<Record<string, string>> {
  return withServer(async (p) => {
    const watchers = new Watchers(p.xdsAddress);
    try {
      await watchers.start();
      const pushBefore = await watchers.push(p.httpBase, 0);
      await sleep(1000);
      const rssBefore = rssBytes(p.pid);
      const poller = readyPoller(p.httpBase);
      const f = await flood(p.xdsAddress, v.names);
      const worstReady = await poller.stop();
      const rssFlood = rssBytes(p.pid);
      const cached = await metric(p.httpBase, 'portolan_xds_cached_resources');
      const pushAfter = await watchers.push(p.httpBase, 1);
      f.close();
      await sleep(3000);
      const rssClosed = rssBytes(p.pid);
      const pushClosed = await watchers.push(p.httpBase, 2);
      const distinct = [...new Set(f.outcomes)].map(
        (o) => `${f.outcomes.filter((x) => x === o).length}× ${o}`,
      );
      return {
        flood: v.name,
        'request size': `${(f.bytes / MIB).toFixed(1)} MiB`,
        outcome: distinct.join('; '),
        'RSS before / flood streams open / closed': `${mib(rssBefore)} / ${mib(rssFlood)} / ${mib(rssClosed)}`,
        'cached resources (flood open)': String(cached),
        'worst /ready during flood': `${worstReady.toFixed(0)} ms${poller.errors.length ? ` (${poller.errors.length} connection resets)` : ''}`,
        'next push: before / flood open / closed': `${pushBefore.toFixed(0)} / ${pushAfter.toFixed(0)} / ${pushClosed.toFixed(0)} ms`,
      };
    } finally {
      watchers.close();
    }
  });
}

/** Opens streams over TLS without a client certificate; how many the server holds. */
async function unauthenticated(): Promise<Record<string, string>> {
  return withServer(async (p, dir) => {
    const secure = p.logs.find((l) => l.msg === 'portolan serving')?.secureXdsAddress;
    if (typeof secure !== 'string') throw new Error('no secure port');
    const root = execFileSync(process.execPath, [MAIN, 'ca', 'root', '--data-dir', join(dir, 'data')]);
    const client = new grpc.Client(secure, grpc.credentials.createSsl(root), {
      'grpc-node.max_session_memory': Number.MAX_SAFE_INTEGER,
    });
    const calls: grpc.ClientDuplexStream<Buffer, Buffer>[] = [];
    let ended = 0;
    try {
      for (let i = 0; i < UNAUTHENTICATED_STREAMS; i++) {
        const call = client.makeBidiStreamRequest(ADS_PATH, identity, identity);
        call.on('status', () => ended++);
        call.on('error', () => {});
        calls.push(call);
      }
      await sleep(5000);
      const held = await metric(p.httpBase, 'portolan_xds_connected_streams');
      return {
        measurement: `streams a client with no certificate holds on the secure port (${UNAUTHENTICATED_STREAMS} opened on one connection, 5 s later)`,
        result: `${held} held by the server; ${ended} ended by the server, ${UNAUTHENTICATED_STREAMS - ended} still open`,
      };
    } finally {
      for (const c of calls) c.cancel();
      client.close();
    }
  });
}

/** One raw HTTP/2 connection per Envoy, a wildcard CDS request, and no reading at all. */
function stuckEnvoy(xds: string, i: number): http2.ClientHttp2Session {
  const session = http2.connect(`http://${xds}`, { settings: { initialWindowSize: 1024 } });
  session.on('error', () => {});
  const stream = session.request({
    ':method': 'POST',
    ':path': ADS_PATH,
    'content-type': 'application/grpc',
    te: 'trailers',
  });
  stream.on('error', () => {});
  stream.pause();
  const msg = encodeDiscoveryRequest({
    node: ENVOY_NODE(`stuck-${i}`),
    type_url: CLUSTER,
    resource_names: [],
  });
  const frame = Buffer.alloc(5 + msg.length);
  frame.writeUInt32BE(msg.length, 1);
  msg.copy(frame, 5);
  stream.write(frame);
  return session;
}

async function stuckStreams(): Promise<Record<string, string>[]> {
  return withServer(async (p) => {
    const probeClient = new RawAdsClient(p.xdsAddress);
    probeClient.send({ node: ENVOY_NODE('size'), type_url: CLUSTER, resource_names: [] });
    const size = (await probeClient.next(30_000)).resources.reduce((n, r) => n + r.value.length, 0);
    probeClient.close();
    await sleep(2000);
    const before = rssBytes(p.pid);
    const sessions = Array.from({ length: STUCK_STREAMS }, (_, i) => stuckEnvoy(p.xdsAddress, i));
    try {
      // Every stuck stream has been answered (its response is written and waiting on flow control).
      for (let t = 0; t < 600; t++) {
        const text = await (await fetch(`${p.httpBase}/metrics`)).text();
        const sent = /^portolan_xds_responses_total\{type="CDS"\} (\d+)/m.exec(text);
        if (Number(sent?.[1] ?? 0) >= STUCK_STREAMS + 1) break;
        await sleep(100);
      }
      await sleep(6000); // past the 5 s stuck-write timeout
      const after = rssBytes(p.pid);
      return [
        {
          measurement: `server RSS with ${STUCK_STREAMS} Envoy streams that never read (CDS of ${SERVICES} clusters, ${(size / 1024).toFixed(0)} KiB of resources): before / with them`,
          result: `${mib(before)} / ${mib(after)} (${((after - before) / STUCK_STREAMS / 1024).toFixed(0)} KiB per stream)`,
        },
      ];
    } finally {
      for (const s of sessions) s.destroy();
    }
  });
}

export async function floodBench(): Promise<void> {
  const rows: Record<string, string>[] = [];
  for (const v of chosenVariants()) rows.push(await cacheFlood(v));
  printTable(
    `Cache flood: portolan serve --registries mock (child process), ${SERVICES} services, defaults; ${FLOOD_STREAMS} gRPC streams on one connection, each one CDS request naming clusters that do not exist; next push = a new service until a gRPC client watching it by name and a wildcard Envoy both hold its cluster. Node ${process.version}.`,
    rows,
  );
  printTable('Secure port and stuck streams (same server set-up).', [
    await unauthenticated(),
    ...(await stuckStreams()),
  ]);
}
