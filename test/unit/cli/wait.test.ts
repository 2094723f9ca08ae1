// `portolan wait` against a stand-in admin server that answers /debug/config_sync and /debug/waitz
// as contract 3 says: the order of the calls, the three outcomes and their exit codes, the deadline
// of every call, and the one JSON shape for scripts.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import { parseTimeout, waitForConfig } from '../../../cli/wait.js';
import type { WaitProxy, WaitzView } from '../../../model/admin-api.js';

interface Call {
  readonly method: string;
  readonly url: string;
  readonly contentType: string | undefined;
}

/** An admin server whose waitz answers are `answers` in turn (the last one repeated). */
async function standIn(
  t: TestContext,
  generation: number,
  answers: readonly WaitzView[],
  { hangWaitz = false } = {},
): Promise<{ addr: string; calls: Call[] }> {
  const calls: Call[] = [];
  let n = 0;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    calls.push({ method: req.method ?? '', url: req.url ?? '', contentType: req.headers['content-type'] });
    req.resume();
    const json = (body: unknown): void => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'POST' && req.url === '/debug/config_sync') return json({ generation });
    if (req.method === 'GET' && req.url?.startsWith('/debug/waitz')) {
      if (hangWaitz) return; // never answers: the client's deadline must end the call
      return json(answers[Math.min(n++, answers.length - 1)]);
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"error":"not found"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return { addr: `127.0.0.1:${(server.address() as AddressInfo).port}`, calls };
}

const proxy = (id: string, state: WaitProxy['state'], extra: Partial<WaitProxy> = {}): WaitProxy => ({
  id,
  connection: `c-${id}`,
  state,
  pending: state === 'PENDING' ? ['CDS', 'RDS'] : [],
  nack: null,
  ...extra,
});

const view = (pushed: boolean, proxies: readonly WaitProxy[]): WaitzView => ({
  generation: 7,
  current: 7,
  pushed,
  proxies,
});

test('wait syncs the config directory first, then polls waitz for that generation until all are SYNCED', async (t) => {
  const { addr, calls } = await standIn(t, 7, [
    view(false, []),
    view(true, [proxy('a', 'SYNCED'), proxy('b', 'PENDING')]),
    view(true, [proxy('a', 'SYNCED'), proxy('b', 'SYNCED')]),
  ]);
  const r = await waitForConfig({ httpAddr: addr, timeoutMs: 10_000, format: 'text', pollMs: 100 });
  assert.equal(r.exitCode, 0, r.output);
  assert.match(r.output, /^synced: 2 proxies ACKed the change in \S+ \(config generation 7\)\n$/);
  assert.deepEqual(calls[0], { method: 'POST', url: '/debug/config_sync', contentType: 'application/json' });
  assert.deepEqual(
    calls.slice(1).map((c) => `${c.method} ${c.url}`),
    ['GET /debug/waitz?generation=7', 'GET /debug/waitz?generation=7', 'GET /debug/waitz?generation=7'],
  );
});

test('a NACK decides at once: exit 1 naming the proxy, the type and the message', async (t) => {
  const nack = { type: 'CDS', name: 'outbound|80||echo', message: 'bad lb policy', version: 'v9' };
  const { addr, calls } = await standIn(t, 3, [
    view(false, [proxy('good', 'PENDING'), proxy('bad', 'NACK', { nack })]),
  ]);
  const r = await waitForConfig({ httpAddr: addr, timeoutMs: 10_000, format: 'text' });
  assert.equal(r.exitCode, 1, r.output);
  assert.deepEqual(Object.keys(r.report), [
    'result',
    'generation',
    'proxies',
    'elapsedMs',
    'nacks',
    'pending',
  ]);
  assert.deepEqual(r.report.nacks, [
    { id: 'bad', type: 'CDS', name: 'outbound|80||echo', message: 'bad lb policy' },
  ]);
  assert.match(r.output, /^NACK: 1 of 2 proxies rejected the change/);
  assert.match(r.output, /\n {2}bad rejected CDS outbound\|80\|\|echo: bad lb policy\n/);
  assert.equal(calls.length, 2, 'no poll after the NACK');
});

test('the timeout is exit 2 naming the proxies still pending, in one JSON shape', async (t) => {
  const { addr } = await standIn(t, 5, [view(true, [proxy('a', 'SYNCED'), proxy('slow', 'PENDING')])]);
  const r = await waitForConfig({ httpAddr: addr, timeoutMs: 400, format: 'json' });
  assert.equal(r.exitCode, 2, r.output);
  const report = JSON.parse(r.output) as Record<string, unknown>;
  assert.deepEqual(Object.keys(report), ['result', 'generation', 'proxies', 'elapsedMs', 'nacks', 'pending']);
  assert.equal(report.result, 'timeout');
  assert.equal(report.generation, 5);
  assert.equal(report.proxies, 2);
  assert.deepEqual(report.pending, [{ id: 'slow', types: ['CDS', 'RDS'] }]);
  assert.deepEqual(report.nacks, []);
});

test('a waitz call that never answers ends at the overall timeout, as a timeout', async (t) => {
  const { addr } = await standIn(t, 5, [], { hangWaitz: true });
  const r = await waitForConfig({ httpAddr: addr, timeoutMs: 500, format: 'text' });
  assert.equal(r.exitCode, 2, r.output);
  assert.match(r.output, /^timeout after \S+: 0 of 0 proxies still pending \(config generation 5\)\n/);
});

test('an unreachable control plane is exit 2 saying so', async () => {
  const closed = await new Promise<string>((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(`127.0.0.1:${port}`));
    });
  });
  const r = await waitForConfig({ httpAddr: closed, timeoutMs: 5000, format: 'json' });
  assert.equal(r.exitCode, 2);
  const report = JSON.parse(r.output) as { result: string; error: string };
  assert.equal(report.result, 'error');
  assert.match(report.error, /cannot reach the Portolan admin API/);
});

test('durations are 20s, 500ms and the like, positive', () => {
  assert.equal(parseTimeout('20s'), 20_000);
  assert.equal(parseTimeout('500ms'), 500);
  assert.equal(parseTimeout('1m30s'), 90_000);
  assert.equal(parseTimeout('0'), undefined);
  assert.equal(parseTimeout('20'), undefined);
  assert.equal(parseTimeout('soon'), undefined);
});

test('a change no connected proxy is concerned by is synced once pushed', async (t) => {
  const { addr } = await standIn(t, 2, [view(false, []), view(true, [])]);
  const r = await waitForConfig({ httpAddr: addr, timeoutMs: 10_000, format: 'text', pollMs: 100 });
  assert.equal(r.exitCode, 0, r.output);
  assert.match(
    r.output,
    /^synced: no connected proxy is concerned by the change \(\S+\) \(config generation 2\)\n$/,
  );
});
