// The admin server's reads refuse a Host that does not name it (issue #45, item 8): a DNS-rebinding
// page (a hostile name resolved to 127.0.0.1) in an operator's browser read /debug/* and the
// dashboard. Real HTTP on loopback with node:http, so that the test sets Host as such a page would.
// /ready and /metrics answer any Host (health checks and scrapers use the names they know).
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { test, type TestContext } from 'node:test';
import { AdminServer } from '../../../admin/admin-server.js';
import { foreignHost } from '../../../admin/same-origin.js';
import { silentLogger } from '../../../log/logger.js';
import { PushHistory } from '../../../admin/push-history.js';
import { startInProcessPlane } from '../../support/in-process.js';

async function startAdmin(t: TestContext): Promise<number> {
  const plane = await startInProcessPlane();
  const admin = new AdminServer({
    discovery: plane.discovery,
    ads: plane.ads,
    mock: plane.mock,
    pushHistory: new PushHistory(),
    logger: silentLogger,
  });
  const { port } = await admin.listen('127.0.0.1', 0);
  t.after(async () => {
    await admin.close();
    await plane.stop();
  });
  return port;
}

function get(port: number, path: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, method: 'GET', path, headers: { host }, timeout: 5000 },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

const READS = [
  '/debug/registryz',
  '/debug/adsz',
  '/debug/syncz',
  '/debug/push_status',
  '/debug/overviewz',
  '/mock/services',
  '/',
];

test('a read with Host evil.example (DNS rebinding) is refused with 403, naming the reason', async (t) => {
  const port = await startAdmin(t);
  for (const path of READS)
    for (const host of ['evil.example', `evil.example:${port}`, `127.0.0.1.evil.example:${port}`]) {
      const res = await get(port, path, host);
      assert.equal(res.status, 403, `${path} with Host ${host}: ${res.body}`);
      assert.match(res.body, /is not the admin address \(127\.0\.0\.1\)/);
    }
});

test('loopback names and the configured address still read; /ready and /metrics answer any Host', async (t) => {
  const port = await startAdmin(t);
  for (const path of READS)
    for (const host of [
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      `127.0.0.2:${port}`,
      `[::1]:${port}`,
      'LOCALHOST',
    ]) {
      const res = await get(port, path, host);
      assert.ok(
        res.status === 200 || res.status === 302,
        `${path} with Host ${host}: ${res.status} ${res.body}`,
      );
    }
  assert.notEqual((await get(port, '/ready', 'evil.example')).status, 403);
  assert.notEqual((await get(port, '/metrics', 'evil.example')).status, 403);
});

test('foreignHost: the agent or any local server can call it with its own listen host', () => {
  assert.equal(foreignHost('10.0.0.5:15014', '10.0.0.5'), undefined, 'the configured address');
  assert.match(foreignHost('127.0.0.1:15014', '10.0.0.5') ?? '', /not the admin address/);
  assert.match(foreignHost('evil.example', '10.0.0.5') ?? '', /not the admin address/);
  assert.equal(
    foreignHost('192.168.1.9:15020', '0.0.0.0'),
    undefined,
    'any IP literal on a wildcard listener',
  );
  assert.equal(foreignHost('localhost:15020', '0.0.0.0'), undefined);
  assert.match(foreignHost('evil.example:15020', '0.0.0.0') ?? '', /not the admin address/);
  assert.match(foreignHost(undefined, '127.0.0.1') ?? '', /Host header .* is required/);
  assert.equal(foreignHost('[::1]:15020', '::1'), undefined);
});
