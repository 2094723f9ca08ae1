// The stand-in Consul follows the documented API: writes made with the `consul` npm package (so the
// requests have the shape a real client sends), reads checked field by field, blocking semantics,
// datacenters and ACL tokens.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Consul from 'consul';
import { ConsulStandin } from '../../support/consul-standin.js';

let standin: ConsulStandin;
let consul: Consul;

before(async () => {
  standin = await ConsulStandin.start();
  consul = new Consul({ host: '127.0.0.1', port: Number(new URL(standin.url).port) });
});

after(async () => {
  consul.destroy();
  await standin.stop();
});

interface Read {
  status: number;
  index: number;
  body: unknown;
  headers: Headers;
  ms: number;
}

async function read(path: string, init: RequestInit = {}): Promise<Read> {
  const started = performance.now();
  const res = await fetch(`${standin.url}${path}`, init);
  const text = await res.text();
  return {
    status: res.status,
    index: Number(res.headers.get('x-consul-index')),
    body: res.headers.get('content-type')?.startsWith('application/json') ? JSON.parse(text) : text,
    headers: res.headers,
    ms: performance.now() - started,
  };
}

interface Entry {
  Node: { Node: string; Address: string; Datacenter: string };
  Service: {
    ID: string;
    Service: string;
    Port: number;
    Tags: string[];
    Meta: Record<string, string>;
    Address: string;
  };
  Checks: { CheckID: string; Status: string; ServiceID: string; Name: string }[];
}

describe('agent registration and reads', () => {
  test('agent/service/register → catalog/services and health/service/NAME with the documented fields', async () => {
    await consul.agent.service.register({
      name: 'web',
      id: 'web-1',
      address: '127.0.0.10',
      port: 8080,
      tags: ['v1', 'team=payments'],
      meta: { protocol: 'grpc' },
      check: { name: 'web ttl', ttl: '30s', timeout: '1s' },
    });
    const services = await read('/v1/catalog/services');
    assert.equal(services.status, 200);
    assert.ok(services.index > 0);
    assert.equal(services.headers.get('x-consul-knownleader'), 'true');
    assert.deepEqual(services.body, { consul: [], web: ['team=payments', 'v1'] });

    const health = await read('/v1/health/service/web');
    const [entry] = health.body as Entry[];
    assert.ok(entry);
    assert.equal(entry.Node.Node, standin.agentNode);
    assert.equal(entry.Node.Datacenter, 'dc1');
    assert.deepEqual(
      {
        ID: entry.Service.ID,
        Service: entry.Service.Service,
        Port: entry.Service.Port,
        Address: entry.Service.Address,
      },
      { ID: 'web-1', Service: 'web', Port: 8080, Address: '127.0.0.10' },
    );
    assert.deepEqual(entry.Service.Meta, { protocol: 'grpc' });
    // The node's serfHealth and the service's own check, which starts critical as in Consul.
    assert.deepEqual(
      entry.Checks.map((c) => [c.CheckID, c.Status, c.ServiceID]),
      [
        ['serfHealth', 'passing', ''],
        ['service:web-1', 'critical', 'web-1'],
      ],
    );
    assert.equal((await read('/v1/health/service/web?passing')).body instanceof Array, true);
    assert.deepEqual((await read('/v1/health/service/web?passing')).body, []);
  });

  test('agent/check/pass|warn|fail and update change the status; re-registering keeps it', async () => {
    await consul.agent.check.pass('service:web-1');
    const status = async () => ((await read('/v1/health/service/web')).body as Entry[])[0]?.Checks[1]?.Status;
    assert.equal(await status(), 'passing');
    await consul.agent.check.warn('service:web-1');
    assert.equal(await status(), 'warning');
    await consul.agent.check.fail('service:web-1');
    assert.equal(await status(), 'critical');
    const res = await fetch(`${standin.url}/v1/agent/check/update/service:web-1`, {
      method: 'PUT',
      body: JSON.stringify({ Status: 'passing', Output: 'ok' }),
    });
    assert.equal(res.status, 200);
    assert.equal(await status(), 'passing');
    await consul.agent.service.register({
      name: 'web',
      id: 'web-1',
      address: '127.0.0.10',
      port: 8080,
      tags: ['v2'],
      check: { name: 'web ttl', ttl: '30s', timeout: '1s' },
    });
    assert.equal(await status(), 'passing');
    const unknown = await fetch(`${standin.url}/v1/agent/check/pass/nope`, { method: 'PUT' });
    assert.equal(unknown.status, 404);
  });

  test('service maintenance adds a critical _service_maintenance check, and removes it', async () => {
    await consul.agent.service.maintenance({ id: 'web-1', enable: true, reason: 'deploy' });
    const checks = async () => ((await read('/v1/health/service/web')).body as Entry[])[0]?.Checks ?? [];
    const maint = (await checks()).find((c) => c.CheckID === '_service_maintenance:web-1');
    assert.equal(maint?.Status, 'critical');
    assert.equal(maint?.Name, 'Service Maintenance Mode');
    await consul.agent.service.maintenance({ id: 'web-1', enable: false });
    assert.equal(
      (await checks()).find((c) => c.CheckID.startsWith('_service_maintenance')),
      undefined,
    );
  });

  test('catalog/register adds an external node and service; catalog/deregister removes them', async () => {
    await consul.catalog.register({
      node: 'ext-1',
      address: '127.0.0.20',
      service: { service: 'db', id: 'db-1', port: 5432, tags: ['primary'] },
      check: { name: 'db alive', serviceid: 'db-1', status: 'passing' },
    });
    const [entry] = (await read('/v1/health/service/db')).body as Entry[];
    assert.equal(entry?.Node.Node, 'ext-1');
    assert.equal(entry?.Node.Address, '127.0.0.20');
    assert.deepEqual(
      entry?.Checks.map((c) => c.Status),
      ['passing'],
    );
    await consul.catalog.deregister({ node: 'ext-1' });
    assert.deepEqual((await read('/v1/health/service/db')).body, []);
    assert.equal(((await read('/v1/catalog/services')).body as Record<string, unknown>).db, undefined);
  });

  test('agent/service/deregister removes the instance and its checks', async () => {
    await consul.agent.service.register({ name: 'tmp', id: 'tmp-1', port: 1 });
    await consul.agent.service.deregister('tmp-1');
    assert.deepEqual((await read('/v1/health/service/tmp')).body, []);
  });
});

describe('blocking queries', () => {
  test('a read at the current index waits for `wait` (plus up to wait/16) and returns the same index', async () => {
    const first = await read('/v1/health/service/web');
    const blocked = await read(`/v1/health/service/web?index=${first.index}&wait=300ms`);
    assert.equal(blocked.index, first.index);
    assert.ok(blocked.ms >= 280 && blocked.ms < 2000, `${blocked.ms} ms`);
  });

  test('a change wakes the read at once with a higher index; another service’s change does not', async () => {
    const first = await read('/v1/health/service/web');
    const waiting = read(`/v1/health/service/web?index=${first.index}&wait=5s`);
    await consul.agent.service.register({ name: 'other', id: 'other-1', port: 2 });
    await new Promise((r) => setTimeout(r, 100));
    await consul.agent.check.warn('service:web-1');
    const woken = await waiting;
    assert.ok(woken.index > first.index);
    assert.ok(woken.ms < 4000, `${woken.ms} ms: woken by the change, not the 5 s wait`);
    assert.equal((woken.body as Entry[])[0]?.Checks[1]?.Status, 'warning');

    const catalog = await read('/v1/catalog/services');
    const catalogWait = read(`/v1/catalog/services?index=${catalog.index}&wait=300ms`);
    await consul.agent.check.pass('service:web-1'); // a health change is not a catalog change
    assert.equal((await catalogWait).index, catalog.index);
  });

  test('a lower raft index after a snapshot restore wakes pending reads, which answer with it', async () => {
    const first = await read('/v1/catalog/services');
    const waiting = read(`/v1/catalog/services?index=${first.index}&wait=5s`);
    await new Promise((r) => setTimeout(r, 50));
    standin.resetIndex(2);
    const woken = await waiting;
    assert.ok(woken.index <= 2 && woken.index < first.index);
    assert.ok(woken.ms < 2000);
  });

  test('bad index or wait values are 400s', async () => {
    assert.equal((await read('/v1/catalog/services?index=-3')).status, 400);
    assert.equal((await read('/v1/catalog/services?index=1&wait=soon')).status, 400);
  });
});

describe('datacenters and tokens', () => {
  test('?dc= of another datacenter is a 500 "No path to datacenter"', async () => {
    const res = await read('/v1/catalog/services?dc=elsewhere');
    assert.equal(res.status, 500);
    assert.equal(res.body, 'No path to datacenter');
    assert.equal((await read('/v1/catalog/services?dc=dc1')).status, 200);
  });

  test('with ACLs: a wrong token is 403, no token sees nothing (filtered), the token sees all', async () => {
    const secured = await ConsulStandin.start({ aclToken: 'secret' });
    try {
      secured.register({ Name: 'web', Port: 80 });
      const wrong = await fetch(`${secured.url}/v1/catalog/services`, {
        headers: { 'X-Consul-Token': 'nope' },
      });
      assert.equal(wrong.status, 403);
      assert.equal(await wrong.text(), 'ACL not found');
      const anonymous = await fetch(`${secured.url}/v1/catalog/services`);
      assert.equal(anonymous.status, 200);
      assert.equal(anonymous.headers.get('x-consul-results-filtered-by-acls'), 'true');
      assert.deepEqual(await anonymous.json(), {});
      const good = await fetch(`${secured.url}/v1/catalog/services`, {
        headers: { 'X-Consul-Token': 'secret' },
      });
      assert.deepEqual(await good.json(), { consul: [], web: [] });
      const bearer = await fetch(`${secured.url}/v1/health/service/web`, {
        headers: { Authorization: 'Bearer secret' },
      });
      assert.equal(((await bearer.json()) as unknown[]).length, 1);
      const write = await fetch(`${secured.url}/v1/agent/service/register`, {
        method: 'PUT',
        body: JSON.stringify({ Name: 'x' }),
      });
      assert.equal(write.status, 403);
    } finally {
      await secured.stop();
    }
  });
});
