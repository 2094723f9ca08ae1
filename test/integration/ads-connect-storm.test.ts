// A connect storm through the real server: far more new streams than the guaranteed rate's burst,
// with adaptive admission (the default) and with strict pacing (--push-admission-max-delay 0). Every
// stream gets its own load assignment; a change made while the storm is still being admitted reaches
// every stream that watches it, served already or not; once the storm is over, the admission rate on
// /metrics is back to the guaranteed one.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PortolanMetrics } from '../../metrics/metrics.js';
import { ENDPOINT } from '../../xds/proto/type-urls.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane } from '../support/in-process.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { decodedResources, grpcNode, RawAdsClient, type DecodedResponse } from '../support/raw-ads-client.js';

const SERVICES = 20;
const STREAMS = 200;
const RATE = 50; // guaranteed new streams per second (a burst of 50)
const host = (i: number): string => `svc-${i}.storm.internal`;
const cluster = (i: number): string => `outbound|7070||${host(i)}`;

interface Assignment {
  cluster_name?: string;
  endpoints?: { lb_endpoints?: { endpoint?: { address?: { socket_address?: { address?: string } } } }[] }[];
}

function held(res: DecodedResponse): { cluster: string; addresses: string[] }[] {
  return decodedResources<Assignment>(res).map((a) => ({
    cluster: a.cluster_name ?? '',
    addresses: (a.endpoints ?? [])
      .flatMap((l) => l.lb_endpoints ?? [])
      .map((e) => e.endpoint?.address?.socket_address?.address ?? ''),
  }));
}

/** The gauge's value on /metrics. */
async function admissionRate(metrics: PortolanMetrics): Promise<number | undefined> {
  const line = (await metrics.registry.metrics())
    .split('\n')
    .find((l) => l.startsWith('portolan_xds_new_stream_admission_rate '));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

for (const admissionMaxDelayMs of [50, 0]) {
  test(`a storm of ${STREAMS} new streams at a guaranteed ${RATE}/s, --push-admission-max-delay ${admissionMaxDelayMs}ms: every stream configured, no change lost`, async (t) => {
    const metrics = new PortolanMetrics();
    const plane = await startInProcessPlane({
      metrics,
      limits: { maxStreamsPerPeer: STREAMS + 10 },
      flowControl: { newStreamsPerSecond: RATE, admissionMaxDelayMs },
    });
    t.after(() => plane.stop());
    for (let i = 0; i < SERVICES; i++) {
      plane.mock.putService(mockService(host(i), [servicePort('grpc', 7070)]));
      plane.mock.setEndpoints(host(i), [endpoint('10.0.0.1', { grpc: 9000 })]);
    }
    assert.equal(await admissionRate(metrics), RATE);

    // Every stream on one HTTP/2 connection (the default subchannel pool), as one busy client would.
    const clients = Array.from({ length: STREAMS }, () => new RawAdsClient(plane.address));
    t.after(() => clients.forEach((c) => c.close()));
    clients.forEach((c, i) =>
      c.send({ node: grpcNode(`storm-${i}`), type_url: ENDPOINT, resource_names: [cluster(i % SERVICES)] }),
    );
    // Reads a stream's responses (each its own cluster only, ACKed) until it holds `address`.
    const settle = async (i: number, address: string): Promise<void> => {
      const c = clients[i];
      assert.ok(c);
      for (;;) {
        const res = await c.next(30_000);
        const assignments = held(res);
        assert.deepEqual(
          assignments.map((a) => a.cluster),
          [cluster(i % SERVICES)],
        );
        c.ack(res, [cluster(i % SERVICES)]);
        if (assignments[0]?.addresses.join() === address) return;
      }
    };
    // The first streams are served (the guaranteed burst); change svc-0 while the rest are admitted.
    await settle(0, '10.0.0.1');
    plane.mock.setEndpoints(host(0), [endpoint('10.0.0.2', { grpc: 9000 })]);
    await Promise.all(
      clients.map((_, i) =>
        i === 0 ? settle(0, '10.0.0.2') : settle(i, i % SERVICES === 0 ? '10.0.0.2' : '10.0.0.1'),
      ),
    );
    await eventually(async () => assert.equal(await admissionRate(metrics), RATE));
  });
}
