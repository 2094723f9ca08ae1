// The push metrics on /metrics reflect what happened on the wire: streams by variant and kind,
// pushes, convergence and debounce observations, responses, resources and bytes, NACKs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MockRegistry } from '../../adapters/mock/registry.js';
import { PortolanMetrics } from '../../metrics/metrics.js';
import { ENDPOINT } from '../../xds/proto/type-urls.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane } from '../support/in-process.js';
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
  mock.putService(mockService(HOST, [servicePort('grpc', 7070)]));
  mock.setEndpoints(HOST, [endpoint('10.0.0.1', { grpc: 9000 })]);
  const metrics = new PortolanMetrics();
  const plane = await startInProcessPlane({ mock, pushWindowMs: 10, metrics });
  const sotw = new RawAdsClient(plane.address);
  const delta = new RawDeltaClient(plane.address);
  t.after(async () => {
    sotw.close();
    delta.close();
    await plane.stop();
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
