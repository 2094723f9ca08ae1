// The agent's status port answers its config dump only to a Host naming its own address (issue #45
// item 8): a DNS-rebinding page (a hostile name resolved to 127.0.0.1) reads nothing of the VM's
// config. Health checks and scrapers keep any Host. A real server on a loopback port.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { test } from 'node:test';
import { StatusServer } from '../../../agent/status/status-server.js';
import { createLogger } from '../../../log/logger.js';

function get(address: string, path: string, host: string): Promise<{ status: number; body: string }> {
  const [hostname, port] = address.split(':');
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port: Number(port), path, headers: { host }, timeout: 5_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: no answer in 5 s`)));
    req.on('error', reject);
    req.end();
  });
}

test('the status port refuses a foreign Host on its config dump, and answers health and metrics to any', async (t) => {
  const server = new StatusServer({
    host: '127.0.0.1',
    port: 0,
    logger: createLogger('silent'),
    readiness: () => ({ ready: true, lines: ['certificate: valid'] }),
    metrics: () => Promise.resolve({ type: 'text/plain', body: 'agent_up 1\n' }),
    configDump: () => ({ status: 200, body: { configs: ['secret listener'] } }),
  });
  await server.start();
  t.after(() => server.stop());

  const foreign = await get(server.address, '/debug/config_dump', 'evil.example');
  assert.equal(foreign.status, 403);
  assert.match(foreign.body, /not the agent's status address \(127\.0\.0\.1\)/);
  assert.doesNotMatch(foreign.body, /secret listener/);

  for (const host of [server.address, `localhost:${server.address.split(':')[1]}`]) {
    const own = await get(server.address, '/debug/config_dump', host);
    assert.equal(own.status, 200, host);
    assert.match(own.body, /secret listener/);
  }
  assert.equal((await get(server.address, '/healthz/ready', 'evil.example')).status, 200);
  assert.equal((await get(server.address, '/metrics', 'evil.example')).body, 'agent_up 1\n');
});
