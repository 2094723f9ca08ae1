// The mock registry: its change events, and its admin HTTP API (plus the admin read endpoints).
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { MockRegistry } from '../../../adapters/mock/registry.js';
import { AdminServer } from '../../../admin/admin-server.js';
import { silentLogger } from '../../../log/logger.js';
import { endpointsOnly, changedHosts, type ChangeEvent } from '../../../model/change.js';
import type { AdsServer } from '../../../xds/server/ads-server.js';
import { CLUSTER } from '../../../xds/proto/type-urls.js';
import { startInProcessPlane } from '../../support/in-process.js';
import { endpoint, mockService, servicePort } from '../../support/model-fixtures.js';
import { grpcNode, RawAdsClient } from '../../support/raw-ads-client.js';
import { StubRegistry } from '../../support/stub-registry.js';

const HOST = 'echo.test';

function recording(mock: MockRegistry): ChangeEvent[] {
  const events: ChangeEvent[] = [];
  mock.onChange((e) => events.push(e));
  return events;
}

describe('MockRegistry change events', () => {
  async function seeded(): Promise<MockRegistry> {
    const mock = new MockRegistry();
    await mock.start();
    mock.putService(mockService(HOST, [servicePort('grpc', 7070)]));
    mock.setEndpoints(HOST, [endpoint('10.0.0.1', { grpc: 7070 })]);
    return mock;
  }

  const cases: {
    change: string;
    apply: (m: MockRegistry) => void;
    expect: { endpointsOnly: boolean } | undefined;
  }[] = [
    {
      change: 'adding an endpoint',
      apply: (m) => m.putEndpoint(HOST, endpoint('10.0.0.2', { grpc: 7070 })),
      expect: { endpointsOnly: true },
    },
    {
      change: 'changing an endpoint',
      apply: (m) => m.putEndpoint(HOST, endpoint('10.0.0.1', { grpc: 7070 }, { weight: 5 })),
      expect: { endpointsOnly: true },
    },
    {
      change: 'deleting an endpoint',
      apply: (m) => m.deleteEndpoint(HOST, '10.0.0.1'),
      expect: { endpointsOnly: true },
    },
    {
      change: 'replacing all endpoints',
      apply: (m) => m.setEndpoints(HOST, []),
      expect: { endpointsOnly: true },
    },
    {
      change: 'adding a service',
      apply: (m) => m.putService(mockService('b.test', [servicePort('grpc', 1)])),
      expect: { endpointsOnly: false },
    },
    {
      change: 'changing a service',
      apply: (m) => m.putService(mockService(HOST, [servicePort('grpc', 7071)])),
      expect: { endpointsOnly: false },
    },
    { change: 'deleting a service', apply: (m) => m.deleteService(HOST), expect: { endpointsOnly: false } },
    {
      change: 're-putting an identical service (no-op)',
      apply: (m) => m.putService(mockService(HOST, [servicePort('grpc', 7070)])),
      expect: undefined,
    },
    {
      change: 're-putting an identical endpoint (no-op)',
      apply: (m) => m.putEndpoint(HOST, endpoint('10.0.0.1', { grpc: 7070 })),
      expect: undefined,
    },
    {
      change: 'deleting a missing endpoint (no-op)',
      apply: (m) => m.deleteEndpoint(HOST, '10.9.9.9'),
      expect: undefined,
    },
    {
      change: 'deleting a missing service (no-op)',
      apply: (m) => m.deleteService('missing.test'),
      expect: undefined,
    },
  ];

  for (const c of cases) {
    test(`${c.change} ${c.expect ? `emits endpointsOnly=${c.expect.endpointsOnly}` : 'emits nothing'}`, async () => {
      const mock = await seeded();
      const events = recording(mock);
      c.apply(mock);
      if (!c.expect) return assert.deepEqual(events, []);
      assert.equal(events.length, 1);
      assert.equal(events[0] && endpointsOnly(events[0]), c.expect.endpointsOnly);
      assert.ok(events[0] && changedHosts(events[0]).has(c.change === 'adding a service' ? 'b.test' : HOST));
    });
  }

  test('is synced after start, and a service put keeps its endpoints', async () => {
    const mock = new MockRegistry();
    assert.equal(mock.hasSynced(), false);
    await mock.start();
    assert.equal(mock.hasSynced(), true);
    mock.putService(mockService(HOST, [servicePort('grpc', 7070)]));
    mock.putEndpoint(HOST, endpoint('10.0.0.1', { grpc: 7070 }));
    mock.putService(mockService(HOST, [servicePort('grpc', 7070)], { labels: { v: '2' } }));
    assert.equal(mock.snapshot().endpoints.get(HOST)?.length, 1);
    assert.equal(mock.snapshot().services.get(HOST)?.registry, 'mock');
  });
});

interface Admin {
  readonly base: string;
  readonly mock: MockRegistry;
  readonly ads: AdsServer;
  readonly xdsAddress: string;
}

/** Admin server on 127.0.0.1:0 over a mock registry, with an ADS server on another loopback port. */
async function startAdmin(t: TestContext, extra: StubRegistry[] = []): Promise<Admin> {
  const plane = await startInProcessPlane({ extraRegistries: extra });
  const { discovery, ads, mock } = plane;
  const admin = new AdminServer({ discovery, ads, mock, logger: silentLogger });
  const addr = await admin.listen('127.0.0.1', 0);
  t.after(async () => {
    await admin.close();
    await plane.stop();
  });
  return { base: `http://127.0.0.1:${addr.port}`, mock, ads, xdsAddress: plane.address };
}

interface RegistryzView {
  synced: boolean;
  conflicts: unknown[];
  registries: {
    name: string;
    status: unknown;
    services: { hostname: string; endpoints: { address: string }[] }[];
  }[];
}

interface AdszView {
  clients: {
    node: string | null;
    kind: string | null;
    peer: string;
    subscriptions: Record<
      string,
      {
        wildcard: boolean;
        names: string[];
        sent: { version: string; nonce: string; names: string[] } | null;
        ackedVersion: string | null;
        lastNack: unknown;
        nacks: number;
      }
    >;
  }[];
}

/** One admin request; `json` is the parsed body (typed as the caller expects) or the plain text. */
async function call<T = unknown>(
  base: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: T }> {
  const res = await fetch(`${base}${path}`, {
    method,
    signal: AbortSignal.timeout(5000),
    ...(body !== undefined && {
      body: typeof body === 'string' ? body : JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
    }),
  });
  const text = await res.text();
  return {
    status: res.status,
    json: (text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text) as T,
  };
}

describe('admin mock API', () => {
  test('PUT /mock/services/HOST adds a service with defaults', async (t) => {
    const { base, mock } = await startAdmin(t);
    const res = await call(base, 'PUT', `/mock/services/${HOST}`, {
      ports: [{ name: 'grpc', number: 7070, protocol: 'grpc' }],
    });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, {
      hostname: HOST,
      namespace: 'default',
      ports: [{ name: 'grpc', number: 7070, protocol: 'GRPC' }],
      addresses: [],
      resolution: 'STATIC',
      labels: {},
      location: 'MESH_INTERNAL',
      registry: 'mock',
    });
    assert.equal(mock.snapshot().services.get(HOST)?.ports[0]?.number, 7070);
  });

  test('POST /mock/services/HOST/endpoints adds an endpoint; unmapped ports default to the service port', async (t) => {
    const { base, mock } = await startAdmin(t);
    await call(base, 'PUT', `/mock/services/${HOST}`, {
      ports: [
        { name: 'grpc', number: 7070 },
        { name: 'http', number: 8080 },
      ],
    });
    const res = await call<unknown[]>(base, 'POST', `/mock/services/${HOST}/endpoints`, {
      address: '10.0.0.1',
      ports: { grpc: 9000 },
      locality: 'r1/z1/s1',
      weight: 3,
      health: 'DRAINING',
    });
    assert.equal(res.status, 200);
    const [ep] = mock.snapshot().endpoints.get(HOST) ?? [];
    assert.deepEqual(ep?.ports, { grpc: 9000, http: 8080 });
    assert.deepEqual(ep?.locality, { region: 'r1', zone: 'z1', subzone: 's1' });
    assert.equal(ep?.weight, 3);
    assert.equal(ep?.health, 'DRAINING');
    assert.equal(res.json.length, 1);
  });

  const badInputs: { what: string; path: string; method: string; body: unknown; field: string }[] = [
    {
      what: 'a service without ports',
      method: 'PUT',
      path: `/mock/services/${HOST}`,
      body: {},
      field: 'ports',
    },
    {
      what: 'a port number out of range',
      method: 'PUT',
      path: `/mock/services/${HOST}`,
      body: { ports: [{ number: 70000 }] },
      field: 'ports[0].number',
    },
    {
      what: 'an unknown protocol',
      method: 'PUT',
      path: `/mock/services/${HOST}`,
      body: { ports: [{ number: 80, protocol: 'QUIC' }] },
      field: 'ports[0].protocol',
    },
    {
      what: 'an unknown resolution',
      method: 'PUT',
      path: `/mock/services/${HOST}`,
      body: { ports: [{ number: 80 }], resolution: 'MAGIC' },
      field: 'resolution',
    },
    { what: 'invalid JSON', method: 'PUT', path: `/mock/services/${HOST}`, body: '{not json', field: 'body' },
    {
      what: 'an endpoint without address',
      method: 'POST',
      path: `/mock/services/${HOST}/endpoints`,
      body: { ports: {} },
      field: 'address',
    },
    {
      what: 'an endpoint weight of 0',
      method: 'POST',
      path: `/mock/services/${HOST}/endpoints`,
      body: { address: '10.0.0.1', weight: 0 },
      field: 'weight',
    },
    {
      what: 'an unknown health',
      method: 'POST',
      path: `/mock/services/${HOST}/endpoints`,
      body: { address: '10.0.0.1', health: 'OK' },
      field: 'health',
    },
    {
      what: 'a non-string label',
      method: 'POST',
      path: `/mock/services/${HOST}/endpoints`,
      body: { address: '10.0.0.1', labels: { a: 1 } },
      field: 'labels.a',
    },
    {
      what: 'endpoints that are not an array',
      method: 'PUT',
      path: `/mock/services/${HOST}/endpoints`,
      body: { address: '10.0.0.1' },
      field: 'body',
    },
  ];
  for (const c of badInputs) {
    test(`400 naming the field for ${c.what}`, async (t) => {
      const { base, mock } = await startAdmin(t);
      mock.putService(mockService(HOST, [servicePort('grpc', 7070)]));
      const before = JSON.stringify([
        ...mock.snapshot().services.values(),
        ...(mock.snapshot().endpoints.get(HOST) ?? []),
      ]);
      const res = await call<{ error?: string }>(base, c.method, c.path, c.body);
      assert.equal(res.status, 400);
      assert.ok(
        String(res.json.error).startsWith(`${c.field}:`),
        `error names ${c.field}: ${String(res.json.error)}`,
      );
      const after = JSON.stringify([
        ...mock.snapshot().services.values(),
        ...(mock.snapshot().endpoints.get(HOST) ?? []),
      ]);
      assert.equal(after, before, 'the registry is unchanged');
    });
  }

  test('DELETE removes an endpoint, then the service; a second DELETE is 404', async (t) => {
    const { base, mock } = await startAdmin(t);
    mock.putService(mockService(HOST, [servicePort('grpc', 7070)]));
    mock.putEndpoint(HOST, endpoint('10.0.0.1', { grpc: 7070 }));
    assert.equal((await call(base, 'DELETE', `/mock/services/${HOST}/endpoints/10.0.0.1`)).status, 204);
    assert.deepEqual(mock.snapshot().endpoints.get(HOST), []);
    assert.equal((await call(base, 'DELETE', `/mock/services/${HOST}/endpoints/10.0.0.1`)).status, 404);
    assert.equal((await call(base, 'DELETE', `/mock/services/${HOST}`)).status, 204);
    assert.equal(mock.snapshot().services.has(HOST), false);
    assert.equal((await call(base, 'DELETE', `/mock/services/${HOST}`)).status, 404);
  });

  test('endpoints of an unknown service are 404', async (t) => {
    const { base } = await startAdmin(t);
    const res = await call(base, 'POST', '/mock/services/missing.test/endpoints', { address: '10.0.0.1' });
    assert.equal(res.status, 404);
  });

  test('GET /mock/services lists services with their endpoints', async (t) => {
    const { base, mock } = await startAdmin(t);
    mock.putService(mockService(HOST, [servicePort('grpc', 7070)]));
    mock.putEndpoint(HOST, endpoint('10.0.0.1', { grpc: 7070 }));
    const res = await call<{ hostname: string; endpoints: { address: string }[] }[]>(
      base,
      'GET',
      '/mock/services',
    );
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.json.map((s) => [s.hostname, s.endpoints.map((e) => e.address)]),
      [[HOST, ['10.0.0.1']]],
    );
  });
});

describe('admin read endpoints', () => {
  test('/ready is 200 once every registry has synced, 503 naming the others before', async (t) => {
    const other = new StubRegistry('other');
    const { base } = await startAdmin(t, [other]);
    const before = await call(base, 'GET', '/ready');
    assert.equal(before.status, 503);
    assert.match(String(before.json), /other/);
    other.publish([]);
    const after = await call(base, 'GET', '/ready');
    assert.equal(after.status, 200);
  });

  test('/debug/registryz lists each registry with its services, endpoints and status', async (t) => {
    const { base, mock } = await startAdmin(t);
    mock.putService(mockService(HOST, [servicePort('grpc', 7070)]));
    mock.putEndpoint(HOST, endpoint('10.0.0.1', { grpc: 7070 }));
    const res = await call<RegistryzView>(base, 'GET', '/debug/registryz');
    assert.equal(res.status, 200);
    assert.equal(res.json.synced, true);
    assert.deepEqual(res.json.conflicts, []);
    assert.equal(res.json.registries.length, 1);
    const [reg] = res.json.registries;
    assert.equal(reg?.name, 'mock');
    assert.ok(reg);
    const { lastSyncAt, ...status } = reg.status as Record<string, unknown>;
    assert.deepEqual(status, { synced: true, stale: false, services: 1, endpoints: 1 });
    assert.ok(Date.parse(String(lastSyncAt)) > 0, 'lastSyncAt is a timestamp');
    assert.equal(reg?.services[0]?.hostname, HOST);
    assert.equal(reg?.services[0]?.endpoints[0]?.address, '10.0.0.1');
  });

  test('/debug/adsz shows a connected client with its subscriptions and what it was sent', async (t) => {
    const { base, mock, xdsAddress } = await startAdmin(t);
    mock.putService(mockService(HOST, [servicePort('grpc', 7070)]));
    const client = new RawAdsClient(xdsAddress);
    t.after(() => client.close());
    client.send({ node: grpcNode('adsz-client'), type_url: CLUSTER });
    const cds = await client.next();
    const res = await call<AdszView>(base, 'GET', '/debug/adsz');
    assert.equal(res.status, 200);
    assert.equal(res.json.clients.length, 1);
    const c = res.json.clients[0];
    assert.equal(c?.node, 'adsz-client');
    assert.equal(c?.kind, 'grpc');
    assert.equal(typeof c?.peer, 'string');
    assert.deepEqual(Object.keys(c?.subscriptions ?? {}), ['CDS']);
    const cdsState = c?.subscriptions.CDS;
    assert.equal(cdsState?.wildcard, true);
    assert.deepEqual(cdsState?.names, []);
    assert.equal(cdsState?.sent?.version, cds.version_info);
    assert.equal(cdsState?.sent?.nonce, cds.nonce);
    assert.deepEqual(cdsState?.sent?.names, ['outbound|7070||echo.test']);
    assert.equal(cdsState?.ackedVersion, null);
    assert.equal(cdsState?.lastNack, null);
    assert.equal(cdsState?.nacks, 0);
  });

  test('unknown admin paths are 404 and writes outside /mock are 405', async (t) => {
    const { base } = await startAdmin(t);
    assert.equal((await call(base, 'GET', '/nope')).status, 404);
    assert.equal((await call(base, 'POST', '/ready', {})).status, 405);
  });
});
