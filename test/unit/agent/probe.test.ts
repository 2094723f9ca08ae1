import assert from 'node:assert/strict';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { test } from 'node:test';
import { checkOnce, Prober } from '../../../agent/workload/probe.js';
import { eventually } from '../../support/eventually.js';

async function listen(server: {
  listen: (port: number, host: string, cb: () => void) => unknown;
  address: () => unknown;
}): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

test('tcpSocket: a listener passes, a closed port fails with the reason', async () => {
  const server = createServer((s) => s.destroy());
  const port = await listen(server);
  assert.deepEqual(await checkOnce({ tcpSocket: { port } }, '127.0.0.1'), { ok: true, message: '' });
  await new Promise<void>((resolve) => server.close(() => resolve()));
  const failed = await checkOnce({ tcpSocket: { port } }, '127.0.0.1');
  assert.equal(failed.ok, false);
  assert.match(failed.message, new RegExp(`^tcp 127.0.0.1:${port}: connect ECONNREFUSED`));
});

test('httpGet: 2xx/3xx pass, others fail; path and headers are sent', async () => {
  let seen: { url?: string; header?: string } = {};
  const server: Server = createHttpServer((req, res) => {
    seen = { url: req.url, header: String(req.headers['x-probe']) };
    res.statusCode = req.url === '/ready' ? 204 : 503;
    res.end();
  });
  const port = await listen(server);
  const ok = await checkOnce(
    { httpGet: { port, path: '/ready', httpHeaders: [{ name: 'x-probe', value: 'yes' }] } },
    '127.0.0.1',
  );
  assert.deepEqual(ok, { ok: true, message: '' });
  assert.deepEqual(seen, { url: '/ready', header: 'yes' });
  const bad = await checkOnce({ httpGet: { port, path: '/down' } }, '127.0.0.1');
  assert.deepEqual(bad, { ok: false, message: `GET http://127.0.0.1:${port}/down: HTTP 503` });
  server.close();
});

test('exec: exit 0 passes; a failure carries stderr; the timeout kills it', async () => {
  assert.equal((await checkOnce({ exec: { command: ['true'] } }, '')).ok, true);
  const failed = await checkOnce({ exec: { command: ['sh', '-c', 'echo broken >&2; exit 3'] } }, '');
  assert.deepEqual(failed, { ok: false, message: 'exec sh -c echo broken >&2; exit 3: broken' });
  const slow = await checkOnce({ exec: { command: ['sleep', '5'] }, timeoutSeconds: 1 }, '');
  assert.deepEqual(slow, { ok: false, message: 'exec sleep 5: no exit within 1000 ms' });
});

test('grpc: an unreachable health service fails with the reason', async () => {
  const server = createServer();
  const port = await listen(server);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  const failed = await checkOnce({ grpc: { port } }, '127.0.0.1');
  assert.equal(failed.ok, false);
  assert.match(failed.message, new RegExp(`^grpc health 127.0.0.1:${port}: `));
});

test('the prober reports a state once a threshold is reached, and each change after', async () => {
  const server = createServer((s) => s.destroy());
  const port = await listen(server);
  const states: [boolean, string][] = [];
  const prober = new Prober({
    probe: { tcpSocket: { port }, periodSeconds: 1, successThreshold: 2, failureThreshold: 1 },
    host: '127.0.0.1',
    onState: (healthy, message) => states.push([healthy, message]),
  });
  prober.start();
  try {
    await eventually(() => states.length === 1, { timeoutMs: 5000 });
    assert.deepEqual(states, [[true, '']], 'healthy after two passes, reported once');
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await eventually(() => states.length === 2, { timeoutMs: 5000 });
    assert.equal(states[1]?.[0], false);
    assert.match(states[1]?.[1] ?? '', /ECONNREFUSED/);
    assert.equal(prober.healthy, false);
  } finally {
    prober.stop();
  }
});
