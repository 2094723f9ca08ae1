// Push fan-out: an endpoint change in a registry reaching many ADS streams. In process: the mock
// registry, the ADS server on loopback, and N raw clients each watching every cluster (CDS
// wildcard) and the EDS of one service, all on this machine's two cores.
import { RawAdsClient, grpcNode, type DecodedResponse } from '../test/support/raw-ads-client.js';
import { endpoint, mockService, servicePort } from '../test/support/model-fixtures.js';
import { startInProcessPlane } from '../test/support/in-process.js';
import { CLUSTER, ENDPOINT } from '../xds/proto/type-urls.js';
import { printTable, summarize } from './table.js';

const SERVICES = 200;

/** Heap in use after a full collection (run with --expose-gc, as `npm run bench` does). */
function heapUsed(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed;
}
const ROUNDS = 10;

async function ackNext(client: RawAdsClient, names?: string[]): Promise<DecodedResponse> {
  const res = await client.next(30_000);
  client.ack(res, names);
  return res;
}

async function fanout(streams: number): Promise<Record<string, string>> {
  const plane = await startInProcessPlane({ pushWindowMs: 0 });
  for (let s = 0; s < SERVICES; s++) {
    const host = `svc-${s}.bench.internal`;
    plane.mock.putService(mockService(host, [servicePort('grpc', 7000)]));
    plane.mock.setEndpoints(host, [endpoint(`127.0.1.${(s % 250) + 1}`, { grpc: 7000 })]);
  }
  const heapBefore = heapUsed();
  const clients: RawAdsClient[] = [];
  try {
    for (let i = 0; i < streams; i++) {
      const c = new RawAdsClient(plane.address);
      clients.push(c);
      c.send({ node: grpcNode(`bench-${i}`), type_url: CLUSTER, resource_names: [] });
    }
    const watched = 'outbound|7000||svc-0.bench.internal';
    await Promise.all(
      clients.map(async (c) => {
        await ackNext(c);
        c.send({ type_url: ENDPOINT, resource_names: [watched] });
        await ackNext(c, [watched]);
      }),
    );
    const heapPerStream = (heapUsed() - heapBefore) / streams / 1024;
    const samples: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const started = performance.now();
      plane.mock.setEndpoints('svc-0.bench.internal', [endpoint(`127.0.2.${r + 1}`, { grpc: 7000 })]);
      await Promise.all(clients.map((c) => ackNext(c, [watched])));
      samples.push(performance.now() - started);
    }
    const s = summarize(samples);
    return {
      streams: String(streams),
      services: String(SERVICES),
      'EDS push to all, p50 ms': s.p50 ?? '',
      'p90 ms': s.p90 ?? '',
      'heap per stream KiB (incl. client side)': heapPerStream.toFixed(1),
    };
  } finally {
    for (const c of clients) c.close();
    await plane.stop();
  }
}

export async function pushFanout(): Promise<void> {
  const rows = [];
  for (const n of [10, 100, 500]) rows.push(await fanout(n));
  printTable(
    `Endpoint change → every stream has the new EDS (in process, push window 0, ${ROUNDS} rounds, clients ACK each response; client and server share the 2 cores).`,
    rows,
  );
}
