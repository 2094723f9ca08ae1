// The push metrics on /metrics reflect what happened on the wire: streams by variant and kind,
// pushes, convergence and debounce observations, responses, resources and bytes, NACKs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { MockRegistry } from '../../adapters/mock/registry.js';
import { AggregateDiscovery } from '../../aggregate/aggregate-discovery.js';
import { silentLogger } from '../../log/logger.js';
import { PortolanMetrics } from '../../metrics/metrics.js';
import { AdsServer } from '../../xds/server/ads-server.js';
import { ENDPOINT } from '../../xds/proto/type-urls.js';
import { eventually } from '../support/eventually.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { grpcNode, RawAdsClient } from '../support/raw-ads-client.js';
import { RawDeltaClient } from '../support/raw-delta-client.js';

const HOST = 'm.mock.internal';
const CLUSTER_NAME = `outbound|7070||${HOST}`;

/** The value of one sample line (`name{labels} value`), or undefined. */
function sample(text: string, line: string): number | undefined {
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}

test('push metrics count streams, pushes, convergence, responses, bytes and NACKs', async (t) => {
  const mock = new MockRegistry();
  const discovery = new AggregateDiscovery([mock]);
  await discovery.start();
  mock.putService(mockService(HOST, [servicePort('grpc', 7070)]));
  mock.setEndpoints(HOST, [endpoint('10.0.0.1', { grpc: 9000 })]);
  const metrics = new PortolanMetrics();
  const ads = new AdsServer({ discovery, logger: silentLogger, pushWindowMs: 10, metrics });
  const server = new grpc.Server();
  ads.register(server);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  const sotw = new RawAdsClient(`127.0.0.1:${port}`);
  const delta = new RawDeltaClient(`127.0.0.1:${port}`);
  t.after(async () => {
    sotw.close();
    delta.close();
    ads.stop();
    server.forceShutdown();
    await discovery.stop();
  });

  sotw.send({ node: grpcNode('metrics-1'), type_url: ENDPOINT, resource_names: [CLUSTER_NAME] });
  const first = await sotw.next();
  sotw.ack(first, [CLUSTER_NAME]);
  delta.send({ node: grpcNode('metrics-2'), type_url: ENDPOINT, resource_names_subscribe: [CLUSTER_NAME] });
  delta.ack(await delta.next());

  mock.setEndpoints(HOST, [endpoint('10.0.0.2', { grpc: 9000 })]);
  const push = await sotw.next();
  sotw.send({
    type_url: ENDPOINT,
    version_info: first.version_info,
    response_nonce: push.nonce,
    resource_names: [CLUSTER_NAME],
    error_detail: { code: 3, message: 'rejected by test' },
  });
  await delta.next();

  await eventually(async () => {
    const text = await metrics.registry.metrics();
    assert.equal(sample(text, 'portolan_xds_connected_streams'), 2);
    assert.equal(sample(text, 'portolan_xds_connected_streams_by_kind{api="sotw",kind="grpc"}'), 1);
    assert.equal(sample(text, 'portolan_xds_connected_streams_by_kind{api="delta",kind="grpc"}'), 1);
    assert.equal(sample(text, 'portolan_xds_pushes_total{kind="eds"}'), 1);
    assert.equal(sample(text, 'portolan_model_changes_total{kind="endpoints"}'), 1);
    assert.equal(sample(text, 'portolan_xds_convergence_seconds_count{kind="eds"}'), 1);
    assert.equal(sample(text, 'portolan_xds_debounce_seconds_count'), 1);
    assert.equal(sample(text, 'portolan_xds_responses_total{type="EDS"}'), 4);
    assert.equal(sample(text, 'portolan_xds_resources_sent_total{type="EDS"}'), 4);
    assert.ok((sample(text, 'portolan_xds_response_bytes_total{type="EDS"}') ?? 0) > 0);
    assert.equal(sample(text, 'portolan_xds_nacks_total{type="EDS"}'), 1);
    assert.equal(sample(text, 'portolan_xds_push_queue_depth'), 0);
  });
});
