// The agent's status port — /healthz/ready, /metrics, /debug/config_dump — and the module seam later
// features plug into: a module gets the upstream connection to open its own streams on, adds a
// route, and holds readiness back with a reason.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { AgentContext, AgentModule } from '../../agent/module.js';
import { CLUSTER } from '../../xds/proto/type-urls.js';
import { encodeDiscoveryRequest, decodeDiscoveryResponse } from '../../xds/proto/wire.js';
import { eventually } from '../support/eventually.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { RawAdsClient } from '../support/raw-ads-client.js';
import {
  clientNode,
  getText,
  startSecurePlane,
  startTestAgent,
  type SecurePlane,
  type TestAgent,
} from './agent-helpers.js';

let cp: SecurePlane;
let agent: TestAgent;
let probeHealthy = true;
let moduleAnswer: { typeUrl: string; resources: number } | undefined;

/** A module as #16's will be: its own stream to the control plane, a route, a readiness condition. */
const exampleModule: AgentModule = {
  name: 'example',
  start(ctx: AgentContext) {
    ctx.status.addRoute('/debug/example', () =>
      Promise.resolve({ status: 200, type: 'application/json', body: JSON.stringify(moduleAnswer ?? null) }),
    );
    const open = (): void => {
      const call = ctx.upstream.openStream(
        '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources',
      );
      if (!call) {
        ctx.upstream.whenRetry(open);
        return;
      }
      call.on('data', (bytes: Buffer) => {
        const res = decodeDiscoveryResponse(bytes);
        moduleAnswer = { typeUrl: res.type_url, resources: res.resources.length };
      });
      call.on('error', () => {});
      call.write(
        encodeDiscoveryRequest({
          node: clientNode('module-node', { NAMESPACE: 'shop', SERVICE_ACCOUNT: 'cart' }),
          type_url: CLUSTER,
        }),
      );
    };
    open();
    return Promise.resolve();
  },
  stop: () => Promise.resolve(),
  notReady: () => (probeHealthy ? undefined : 'the example probe fails'),
};

before(async () => {
  cp = await startSecurePlane();
  cp.plane.mock.putService(
    mockService('echo.shop.internal', [servicePort('grpc', 7070)], { namespace: 'shop' }),
  );
  cp.plane.mock.setEndpoints('echo.shop.internal', [endpoint('127.0.0.7', { grpc: 7070 })]);
  agent = await startTestAgent(cp, {
    name: 'status',
    token: cp.token('shop', 'cart').token,
    modules: [exampleModule],
  });
  await eventually(() => agent.readiness().ready);
});

after(async () => {
  await agent?.stop();
  await cp?.stop();
});

test('/healthz/ready says what it rests on; a module holds it back with its reason', async () => {
  const ready = await getText(`${agent.statusBase}/healthz/ready`);
  assert.equal(ready.status, 200);
  assert.match(
    ready.body,
    /^ready\ncertificate: spiffe:\/\/cluster\.local\/ns\/shop\/sa\/cart valid until \S+\ncontrol plane: connected to 127\.0\.0\.1:\d+\n$/,
  );
  probeHealthy = false;
  const held = await getText(`${agent.statusBase}/healthz/ready`);
  assert.equal(held.status, 503);
  assert.match(held.body, /\nexample: the example probe fails\n$/);
  probeHealthy = true;
  const post = await fetch(`${agent.statusBase}/healthz/ready`, { method: 'POST' });
  assert.equal(post.status, 405);
  assert.equal((await getText(`${agent.statusBase}/nope`)).status, 404);
});

test('a module opens its own stream on the agent’s upstream connection and serves a route', async () => {
  const answer = await eventually(async () => {
    const r = JSON.parse((await getText(`${agent.statusBase}/debug/example`)).body) as typeof moduleAnswer;
    assert.ok(r);
    return r;
  });
  assert.deepEqual(answer, { typeUrl: CLUSTER, resources: 1 });
});

test('/metrics: connection, streams, certificate expiry, cache', async () => {
  const c = new RawAdsClient(agent.xdsAddress);
  try {
    c.send({ node: clientNode('metrics-1'), type_url: CLUSTER, resource_names: [] });
    c.ack(await c.next());
    await eventually(async () => {
      const text = (await getText(`${agent.statusBase}/metrics`)).body;
      assert.match(text, /^portolan_agent_upstream_connected 1$/m);
      assert.match(text, /^portolan_agent_local_streams\{api="sotw"\} 1$/m);
      assert.match(text, /^portolan_agent_local_streams\{api="delta"\} 0$/m);
      assert.match(text, /^portolan_agent_certificate_expiry_seconds \d+(\.\d+)?$/m);
      assert.match(text, /^portolan_agent_cache_nodes 1$/m);
      assert.match(text, /^portolan_agent_cache_age_seconds \d/m);
      assert.match(text, /^portolan_agent_certificate_requests_total\{result="issued"\} 1$/m);
      assert.match(text, /^portolan_agent_upstream_reconnects_total 0$/m);
    });
  } finally {
    c.close();
  }
});

test('/debug/config_dump: every node in brief; one node’s resources decoded; an unknown node 404', async () => {
  const all = JSON.parse((await getText(`${agent.statusBase}/debug/config_dump`)).body) as {
    nodes: { node: string; resources: Record<string, number> }[];
  };
  assert.deepEqual(all.nodes.find((n) => n.node === 'metrics-1')?.resources, { [CLUSTER]: 1 });
  const one = JSON.parse((await getText(`${agent.statusBase}/debug/config_dump?proxyID=metrics-1`)).body) as {
    cache: { typeUrl: string; resources: { name: string; resource: { '@type': string; name: string } }[] }[];
  };
  const cds = one.cache.find((t) => t.typeUrl === CLUSTER);
  assert.equal(cds?.resources[0]?.resource['@type'], CLUSTER);
  assert.equal(cds?.resources[0]?.resource.name, 'outbound|7070||echo.shop.internal');
  const missing = await getText(`${agent.statusBase}/debug/config_dump?proxyID=nobody`);
  assert.equal(missing.status, 404);
});
