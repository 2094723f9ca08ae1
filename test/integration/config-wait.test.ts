// Config generations end to end in one process (issue #47 items 2 and 3, contract 3 of the session
// brief): a config-directory edit made just before POST /debug/config_sync is taken in by it (the
// watcher's quiet period is a minute here, so the watcher alone would not have), and answers the
// new generation; GET /debug/waitz?generation=N then follows the streams that generation changed
// something for — an ACKing client PENDING until it ACKs, then SYNCED; a NACKing one NACK with its
// message; a silent one PENDING; an unaffected one not listed; one connecting after the change
// listed once sent it; one that disconnects dropped — over SotW and delta. /debug/push_status and
// /debug/historyz carry the generation; two publications coalesced into one push both list the
// stream it changed. Raw ADS clients over loopback, the admin server over HTTP.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { AdminServer } from '../../admin/admin-server.js';
import { PushHistory } from '../../admin/push-history.js';
import { silentLogger } from '../../log/logger.js';
import type {
  ConfigSyncView,
  HistoryzView,
  PushStatusView,
  WaitProxy,
  WaitzView,
} from '../../model/admin-api.js';
import { Store } from '../../store/store.js';
import { ENDPOINT } from '../../xds/proto/type-urls.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { grpcNode, RawAdsClient, type DecodedResponse } from '../support/raw-ads-client.js';
import { waitz as waitzView } from '../../admin/waitz.js';
import { RawDeltaClient } from '../support/raw-delta-client.js';

const A = 'a.wait.internal';
const B = 'b.wait.internal';
const EDS_A = `outbound|7070||${A}`;
const EDS_B = `outbound|7070||${B}`;

function serviceEntry(host: string, address: string): string {
  return `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: ${host.split('.')[0]}
  namespace: default
spec:
  hosts: [${host}]
  location: MESH_INTERNAL
  resolution: STATIC
  ports:
    - name: grpc
      number: 7070
      protocol: GRPC
  endpoints:
    - address: ${address}
      ports:
        grpc: 9000
`;
}

let dir: string;
let plane: InProcessPlane;
let store: Store;
let admin: AdminServer;
let port: number;
const clients: { close(): void }[] = [];

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-config-wait-'));
  const config = join(dir, 'config');
  mkdirSync(config);
  writeFileSync(join(config, 'a.yaml'), serviceEntry(A, '10.0.0.1'));
  writeFileSync(join(config, 'b.yaml'), serviceEntry(B, '10.0.1.1'));
  mkdirSync(join(dir, 'data'));
  store = Store.open({ dataDir: join(dir, 'data'), logger: silentLogger });
  const pushHistory = new PushHistory();
  plane = await startInProcessPlane({
    configDir: config,
    // A minute of quiet: only config_sync takes an edit in within the test.
    configDebounceMs: 60_000,
    configHistory: store.history,
    observers: [pushHistory],
  });
  admin = new AdminServer({
    discovery: plane.discovery,
    ads: plane.ads,
    ...(plane.config && { config: plane.config }),
    pushHistory,
    store,
    logger: silentLogger,
  });
  port = (await admin.listen('127.0.0.1', 0)).port;
});

after(async () => {
  for (const c of clients) c.close();
  await admin.close();
  await plane.stop();
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

function http(
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers, timeout: 20_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as unknown }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

async function sync(): Promise<number> {
  const res = await http('POST', '/debug/config_sync');
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return (res.body as ConfigSyncView).generation;
}

async function waitz(generation: number): Promise<WaitzView> {
  const res = await http('GET', `/debug/waitz?generation=${generation}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as WaitzView;
}

async function proxyIn(generation: number, id: string): Promise<WaitProxy | undefined> {
  return (await waitz(generation)).proxies.find((p) => p.id === id);
}

/** A SotW client on EDS of `cluster`, having ACKed its first response. */
async function edsClient(id: string, cluster: string): Promise<RawAdsClient> {
  const client = new RawAdsClient(plane.address);
  clients.push(client);
  client.send({ node: grpcNode(id), type_url: ENDPOINT, resource_names: [cluster] });
  client.ack(await client.next(), [cluster]);
  return client;
}

function nack(client: RawAdsClient, res: DecodedResponse, cluster: string, message: string): void {
  client.send({
    type_url: res.type_url,
    version_info: '',
    response_nonce: res.nonce,
    resource_names: [cluster],
    error_detail: { code: 3, message },
  });
}

let acking: RawAdsClient;
let nacking: RawAdsClient;
let silent: RawAdsClient;
let generation = 0;
/** The generation of the initial load. */
let initial = 0;

test('config_sync takes in a write the watcher has not (its quiet period is a minute) and answers its generation', async () => {
  acking = await edsClient('acking', EDS_A);
  nacking = await edsClient('nacking', EDS_A);
  silent = await edsClient('silent', EDS_A);
  await edsClient('unaffected', EDS_B);
  const before = await sync();
  assert.ok(before >= 1, `the initial load is a publication: ${before}`);
  assert.equal(await sync(), before, 'nothing changed on disk: no new generation');

  writeFileSync(join(dir, 'config', 'a.yaml'), serviceEntry(A, '10.0.0.2'));
  assert.equal(plane.config?.generation(), before, 'the watcher waits for its quiet period');
  generation = await sync();
  assert.equal(generation, before + 1);
  initial = before;
});

test('waitz: every A client is sent the change; before any answers, all PENDING on EDS; B is not listed', async () => {
  const [ackRes, nackRes] = await Promise.all([acking.next(), nacking.next(), silent.next()]);
  const view = await waitz(generation);
  assert.equal(view.generation, generation);
  assert.equal(view.current, generation);
  assert.equal(view.pushed, true);
  assert.deepEqual(
    view.proxies.map((p) => [p.id, p.state, p.pending, p.nack]),
    [
      ['acking', 'PENDING', ['EDS'], null],
      ['nacking', 'PENDING', ['EDS'], null],
      ['silent', 'PENDING', ['EDS'], null],
    ],
  );
  acking.ack(ackRes, [EDS_A]);
  nack(nacking, nackRes, EDS_A, 'endpoint 10.0.0.2 refused by test');
  await eventually(async () => {
    const now = await waitz(generation);
    assert.deepEqual(
      now.proxies.map((p) => [p.id, p.state]),
      [
        ['acking', 'SYNCED'],
        ['nacking', 'NACK'],
        ['silent', 'PENDING'],
      ],
    );
    const nacked = now.proxies.find((p) => p.id === 'nacking');
    assert.equal(nacked?.nack?.type, 'EDS');
    assert.equal(nacked?.nack?.message, 'endpoint 10.0.0.2 refused by test');
  });
});

test('waitz: a generation not yet published is not pushed and lists nobody', async () => {
  const future = await waitz(generation + 1);
  assert.equal(future.pushed, false);
  assert.equal(future.current, generation);
  assert.deepEqual(future.proxies, []);
});

test('waitz: a client connecting after the change is listed once sent it, SYNCED once it ACKs', async () => {
  const late = new RawAdsClient(plane.address);
  clients.push(late);
  assert.equal(await proxyIn(generation, 'late'), undefined);
  late.send({ node: grpcNode('late'), type_url: ENDPOINT, resource_names: [EDS_A] });
  const res = await late.next();
  assert.equal((await proxyIn(generation, 'late'))?.state, 'PENDING');
  late.ack(res, [EDS_A]);
  await eventually(async () => assert.equal((await proxyIn(generation, 'late'))?.state, 'SYNCED'));
});

test('waitz over delta: a NACK of the change is NACK, an ACK SYNCED', async () => {
  const before = generation;
  const ackD = new RawDeltaClient(plane.address);
  const nackD = new RawDeltaClient(plane.address);
  clients.push(ackD, nackD);
  for (const [c, id] of [
    [ackD, 'delta-acking'],
    [nackD, 'delta-nacking'],
  ] as const) {
    c.send({ node: grpcNode(id), type_url: ENDPOINT, resource_names_subscribe: [EDS_B] });
    c.ack(await c.next());
  }
  writeFileSync(join(dir, 'config', 'b.yaml'), serviceEntry(B, '10.0.1.2'));
  generation = await sync();
  assert.equal(generation, before + 1);
  const [a, n] = await Promise.all([ackD.next(), nackD.next()]);
  ackD.ack(a);
  nackD.send({
    type_url: ENDPOINT,
    response_nonce: n.nonce,
    error_detail: { code: 3, message: 'delta says no' },
  });
  await eventually(async () => {
    const view = await waitz(generation);
    const states = Object.fromEntries(view.proxies.map((p) => [p.id, p.state]));
    assert.equal(states['delta-acking'], 'SYNCED');
    assert.equal(states['delta-nacking'], 'NACK');
    assert.equal(states.acking, undefined, 'the A clients are not changed by an edit of B');
    assert.equal(view.proxies.find((p) => p.id === 'delta-nacking')?.nack?.message, 'delta says no');
  });
});

test('waitz: a stream that disconnects is dropped', async () => {
  const first = generation - 1;
  assert.equal((await proxyIn(first, 'silent'))?.state, 'PENDING');
  silent.close();
  await eventually(async () => assert.equal(await proxyIn(first, 'silent'), undefined));
});

test('push_status and historyz carry the generation: the push, the NACK, and the file rows', async () => {
  const first = generation - 1;
  const status = (await http('GET', '/debug/push_status')).body as PushStatusView;
  assert.ok(
    status.recent.some((p) => p.generation === first && p.trigger.files.includes('a.yaml')),
    JSON.stringify(status.recent.map((p) => [p.round, p.generation, p.trigger.files])),
  );
  const nackRecord = status.nacks.find((n) => n.node === 'nacking');
  assert.equal(nackRecord?.generation, first);
  const history = (await http('GET', '/debug/historyz')).body as HistoryzView;
  const rows = history.changes.filter((c) => c.source === 'config' && c.subject === 'a.yaml');
  assert.deepEqual(
    rows.map((r) => [r.event, r.generation]),
    [
      ['accepted', first],
      ['accepted', initial],
    ],
  );
});

test('config_sync: calls at once share a rescan and answer one generation; a foreign Origin is refused', async () => {
  const before = generation;
  writeFileSync(join(dir, 'config', 'a.yaml'), serviceEntry(A, '10.0.0.3'));
  const answers = await Promise.all([sync(), sync(), sync()]);
  assert.deepEqual(answers, [before + 1, before + 1, before + 1]);
  generation = before + 1;
  const refused = await http('POST', '/debug/config_sync', { origin: 'http://evil.example' });
  assert.equal(refused.status, 403);
  assert.equal((await http('GET', '/debug/config_sync')).status, 405);
  assert.equal((await http('GET', '/debug/waitz?generation=x')).status, 400);
});

test('config_sync without the config registry answers generation 0', async () => {
  const bare = new AdminServer({ discovery: plane.discovery, ads: plane.ads, logger: silentLogger });
  const { port: barePort } = await bare.listen('127.0.0.1', 0);
  try {
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port: barePort, method: 'POST', path: '/debug/config_sync' },
        (r) => {
          let body = '';
          r.setEncoding('utf8');
          r.on('data', (c: string) => (body += c));
          r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    assert.equal(res.status, 200);
    assert.deepEqual(JSON.parse(res.body), { generation: 0 });
  } finally {
    await bare.close();
  }
});

test('coalesced: generations N and N+1 in one push; waitz N lists the stream it changed, pushed once handed out', async (t) => {
  // A plane of its own with a push window, so that both changes wait in the debouncer together.
  const own = await startInProcessPlane({ pushWindowMs: 50 });
  t.after(() => own.stop());
  const C = 'c.wait.internal';
  await own.progress.after(() => {
    own.mock.putService(mockService(C, [servicePort('grpc', 7070)]));
    own.mock.setEndpoints(C, [endpoint('10.0.2.1', { grpc: 9000 })]);
  });
  const client = new RawAdsClient(own.address);
  t.after(() => client.close());
  const cluster = `outbound|7070||${C}`;
  client.send({ node: grpcNode('coalesced'), type_url: ENDPOINT, resource_names: [cluster] });
  client.ack(await client.next(), [cluster]);
  const view = (n: number) => waitzView(own.ads.streamList(), n, 6, own.ads.pushedGenerations());
  const pushed = own.progress.next();
  // Two publications (5 and 6, as the config directory would number them) in one tick: one push.
  own.mock.setEndpoints(C, [endpoint('10.0.2.2', { grpc: 9000 })]);
  own.ads.requestFullPush({ registries: ['config'], files: ['c.yaml'], generation: 5 });
  own.ads.requestFullPush({ registries: ['config'], files: ['c.yaml'], generation: 6 });
  assert.equal(view(5).pushed, false, 'still in the debouncer');
  assert.equal((await pushed).generation, 6);
  const res = await client.next();
  for (const n of [5, 6]) {
    assert.equal(view(n).pushed, true);
    assert.deepEqual(
      view(n).proxies.map((p) => [p.id, p.state]),
      [['coalesced', 'PENDING']],
    );
  }
  client.ack(res, [cluster]);
  await eventually(() =>
    assert.deepEqual(
      view(5).proxies.map((p) => [p.id, p.state]),
      [['coalesced', 'SYNCED']],
    ),
  );
});
