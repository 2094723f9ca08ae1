// The mock registry's admin API against what a browser page or a careless client can send: a
// cross-site `text/plain` POST (no CORS preflight) used to add an endpoint, which then took a share
// of a config-owned hostname's traffic; an address of `not an ip; <x>` was served in EDS; and a
// malformed percent-escape in the path was a logged 500. Requests go over real HTTP on loopback,
// with node:http so that the test sets Host and Origin as a browser or a DNS-rebinding page would.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { describe, test, type TestContext } from 'node:test';
import { AdminServer } from '../../../admin/admin-server.js';
import { mockExposureWarning } from '../../../admin/mock-api.js';
import type { Logger } from '../../../log/logger.js';
import { silentLogger } from '../../../log/logger.js';
import { startInProcessPlane } from '../../support/in-process.js';
import { endpoint, mockService, servicePort } from '../../support/model-fixtures.js';
import { StubRegistry } from '../../support/stub-registry.js';

const HOST = 'echo.mock.internal';
const OWNED = 'owned.config.internal';

interface Reply {
  readonly status: number;
  readonly body: { error?: string } & Record<string, unknown>;
}

async function startAdmin(t: TestContext, logger: Logger = silentLogger) {
  // A registry named like the config directory's, first in merge order, owning OWNED.
  const config = new StubRegistry('config');
  config.publish([mockService(OWNED, [servicePort('grpc', 7070)])]);
  const plane = await startInProcessPlane({ extraRegistries: [config] });
  const admin = new AdminServer({ discovery: plane.discovery, ads: plane.ads, mock: plane.mock, logger });
  const addr = await admin.listen('127.0.0.1', 0);
  t.after(async () => {
    await admin.close();
    await plane.stop();
  });
  plane.mock.putService(mockService(HOST, [servicePort('grpc', 7070)]));
  return { port: addr.port, mock: plane.mock };
}

function send(
  port: number,
  method: string,
  path: string,
  { body, headers = {} }: { body?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers, timeout: 5000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: (text ? JSON.parse(text) : {}) as Reply['body'] }),
      );
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end(body);
  });
}

const json = { 'content-type': 'application/json' };
const endpointsOf = (mock: {
  snapshot(): { endpoints: ReadonlyMap<string, readonly { address: string }[]> };
}) => (mock.snapshot().endpoints.get(HOST) ?? []).map((e) => e.address);

describe('writes need JSON and a same-origin request', () => {
  test('a cross-site text/plain POST with a foreign Origin adds nothing', async (t) => {
    const { port, mock } = await startAdmin(t);
    const res = await send(port, 'POST', `/mock/services/${HOST}/endpoints`, {
      body: JSON.stringify({ address: '10.6.6.6' }),
      headers: { 'content-type': 'text/plain;charset=UTF-8', origin: 'http://evil.example' },
    });
    assert.equal(res.status, 403);
    assert.deepEqual(endpointsOf(mock), []);
  });

  test('a write without application/json is 415, whatever its origin', async (t) => {
    const { port, mock } = await startAdmin(t);
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', undefined]) {
      const res = await send(port, 'POST', `/mock/services/${HOST}/endpoints`, {
        body: JSON.stringify({ address: '10.0.0.1' }),
        headers: type ? { 'content-type': type } : {},
      });
      assert.equal(res.status, 415, `content-type ${String(type)}`);
      assert.match(res.body.error ?? '', /application\/json/);
    }
    assert.deepEqual(endpointsOf(mock), []);
  });

  test('a foreign Origin, or a Host that is not the admin address (DNS rebinding), is 403', async (t) => {
    const { port, mock } = await startAdmin(t);
    const body = JSON.stringify({ address: '10.0.0.1' });
    const cases: Record<string, string>[] = [
      { ...json, origin: 'http://evil.example' },
      { ...json, origin: 'null' },
      { ...json, origin: `http://127.0.0.1:${port + 1}` },
      { ...json, host: `evil.example:${port}` },
    ];
    for (const headers of cases) {
      const res = await send(port, 'POST', `/mock/services/${HOST}/endpoints`, { body, headers });
      assert.equal(res.status, 403, JSON.stringify(headers));
    }
    assert.deepEqual(endpointsOf(mock), []);
    // Reads are checked too: a rebinding page cannot read the mock registry either.
    assert.equal(
      (await send(port, 'GET', '/mock/services', { headers: { host: 'evil.example' } })).status,
      403,
    );

    // The admin address itself, and localhost for a loopback address, are fine.
    for (const headers of [
      { ...json, origin: `http://127.0.0.1:${port}` },
      { ...json, host: `localhost:${port}`, origin: `http://localhost:${port}` },
    ]) {
      const res = await send(port, 'POST', `/mock/services/${HOST}/endpoints`, { body, headers });
      assert.equal(res.status, 200, JSON.stringify(headers));
    }
    assert.deepEqual(endpointsOf(mock), ['10.0.0.1']);
  });
});

describe('addresses and hostnames are checked', () => {
  test('an endpoint address that is not an IP is a 400 naming the field', async (t) => {
    const { port, mock } = await startAdmin(t);
    for (const address of ['not an ip; <x>', 'echo.example.com', '10.0.0.256', '']) {
      const res = await send(port, 'POST', `/mock/services/${HOST}/endpoints`, {
        body: JSON.stringify({ address }),
        headers: json,
      });
      assert.equal(res.status, 400, address);
      assert.match(res.body.error ?? '', /^address: /);
    }
    const list = await send(port, 'PUT', `/mock/services/${HOST}/endpoints`, {
      body: JSON.stringify([{ address: '10.0.0.1' }, { address: 'bad ip' }]),
      headers: json,
    });
    assert.equal(list.status, 400);
    assert.deepEqual(endpointsOf(mock), []);
    const v6 = await send(port, 'POST', `/mock/services/${HOST}/endpoints`, {
      body: JSON.stringify({ address: 'fd00::1' }),
      headers: json,
    });
    assert.equal(v6.status, 200);
  });

  test('a hostname that is not a DNS name, or a service address that is not an IP or CIDR, is a 400', async (t) => {
    const { port, mock } = await startAdmin(t);
    const ports = { ports: [{ name: 'grpc', number: 7070 }] };
    for (const host of ['bad_host!', 'a..b', `${'x'.repeat(64)}.example`, '-lead.example']) {
      const res = await send(port, 'PUT', `/mock/services/${encodeURIComponent(host)}`, {
        body: JSON.stringify(ports),
        headers: json,
      });
      assert.equal(res.status, 400, host);
      assert.match(res.body.error ?? '', /^hostname: /);
    }
    const vip = await send(port, 'PUT', '/mock/services/vip.mock.internal', {
      body: JSON.stringify({ ...ports, addresses: ['240.0.0.1', 'not; an ip'] }),
      headers: json,
    });
    assert.equal(vip.status, 400);
    assert.match(vip.body.error ?? '', /^addresses\[1\]: /);
    assert.deepEqual([...mock.snapshot().services.keys()], [HOST]);
  });

  test('a malformed percent-escape in the path is a 400, not a logged 500', async (t) => {
    const errors: unknown[] = [];
    const logger = { ...silentLogger, error: (...args: unknown[]) => errors.push(args) } as unknown as Logger;
    const { port } = await startAdmin(t, logger);
    const res = await send(port, 'DELETE', '/mock/services/%E0%A4%A/endpoints');
    assert.equal(res.status, 400);
    assert.match(res.body.error ?? '', /percent/);
    assert.deepEqual(errors, []);
  });
});

describe('a hostname another registry serves is not the mock’s to write', () => {
  test('PUT and endpoint writes to a config-owned hostname are 409 naming the owner', async (t) => {
    const { port, mock } = await startAdmin(t);
    const put = await send(port, 'PUT', `/mock/services/${OWNED}`, {
      body: JSON.stringify({ ports: [{ name: 'grpc', number: 7070 }] }),
      headers: json,
    });
    assert.equal(put.status, 409);
    assert.match(put.body.error ?? '', /owned\.config\.internal is served by the config registry/);
    assert.equal(mock.snapshot().services.has(OWNED), false);

    // A mock service that another registry started to serve later: its endpoints are frozen too.
    mock.putService(mockService(OWNED, [servicePort('grpc', 7070)]));
    const post = await send(port, 'POST', `/mock/services/${OWNED}/endpoints`, {
      body: JSON.stringify({ address: '10.6.6.6' }),
      headers: json,
    });
    assert.equal(post.status, 409);
    assert.deepEqual(mock.snapshot().endpoints.get(OWNED) ?? [], []);
    // Removing the mock's own copy is still allowed.
    assert.equal((await send(port, 'DELETE', `/mock/services/${OWNED}`)).status, 204);
  });
});

describe('GET on a service and its endpoints, as the docs list them', () => {
  test('GET /mock/services/HOST and /endpoints answer; an unknown host is 404', async (t) => {
    const { port, mock } = await startAdmin(t);
    mock.putEndpoint(HOST, endpoint('10.0.0.1', { grpc: 7070 }));
    const service = await send(port, 'GET', `/mock/services/${HOST}`);
    assert.equal(service.status, 200);
    assert.equal(service.body.hostname, HOST);
    assert.deepEqual(
      (service.body.endpoints as { address: string }[]).map((e) => e.address),
      ['10.0.0.1'],
    );
    const list = await send(port, 'GET', `/mock/services/${HOST}/endpoints`);
    assert.equal(list.status, 200);
    assert.equal((list.body as unknown as { address: string }[])[0]?.address, '10.0.0.1');
    assert.equal((await send(port, 'GET', '/mock/services/missing.mock.internal')).status, 404);
    assert.equal((await send(port, 'GET', '/mock/services/missing.mock.internal/endpoints')).status, 404);
  });
});

test('serve warns when the mock registry is enabled with a non-loopback admin address', () => {
  assert.equal(mockExposureWarning(['config', 'mock'], '127.0.0.1'), undefined);
  assert.equal(mockExposureWarning(['config', 'mock'], 'localhost'), undefined);
  assert.equal(mockExposureWarning(['config', 'mock'], '::1'), undefined);
  assert.equal(mockExposureWarning(['config'], '0.0.0.0'), undefined);
  for (const host of ['0.0.0.0', '::', '10.1.2.3', 'admin.example'])
    assert.match(mockExposureWarning(['mock'], host) ?? '', /mock registry .* not loopback/);
});
