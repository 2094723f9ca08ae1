// What one client may hold (issue #17, item 2): on the secure port a stream without a verified
// certificate is refused as it opens; streams are capped per peer (remote address; identity on the
// secure port); a stream that says nothing is ended; HTTP/2 concurrent streams, idle connections,
// server keepalive and the client ping policy apply; and streams that never read share one body.
import { SqliteSharedStore } from '../../store/sqlite-shared.js';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import * as http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import * as grpc from '@grpc/grpc-js';
import { CertificateAuthority } from '../../ca/authority.js';
import { requestCertificate } from '../../ca/ca-client.js';
import { createCsr } from '../../ca/certificates.js';
import { workloadIdentity } from '../../ca/identity.js';
import { createJoinToken } from '../../ca/join-tokens.js';
import { generateKeyPair, privateKeyPem } from '../../ca/keys.js';
import { SecurePort } from '../../ca/secure-server.js';
import { silentLogger } from '../../log/logger.js';
import { Store } from '../../store/store.js';
import { CLUSTER } from '../../xds/proto/type-urls.js';
import { encodeDiscoveryRequest } from '../../xds/proto/wire.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane, type InProcessPlane, type PlaneOptions } from '../support/in-process.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { ADS_PATH, grpcNode, RawAdsClient } from '../support/raw-ads-client.js';

const ID = workloadIdentity('cluster.local', 'shop', 'orders');
const identity = (b: Buffer): Buffer => b;
const streamCount = (plane: InProcessPlane): number => plane.ads.streamList().length;

/** `promise`, or a rejection naming `what` after `ms`. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  const timeout = new AbortController();
  try {
    return await Promise.race([
      promise,
      sleep(ms, undefined, { signal: timeout.signal }).then(() => {
        throw new Error(`no ${what} within ${ms} ms`);
      }),
    ]);
  } finally {
    timeout.abort();
  }
}

async function plane(t: TestContext, options: PlaneOptions = {}): Promise<InProcessPlane> {
  const p = await startInProcessPlane(options);
  t.after(() => p.stop());
  p.mock.putService(mockService('cart.limits.internal', [servicePort('grpc', 7070)]));
  p.mock.setEndpoints('cart.limits.internal', [endpoint('10.0.0.1', { grpc: 9000 })]);
  return p;
}

function connect(t: TestContext, address: string, options: grpc.ChannelOptions = {}): RawAdsClient {
  const client = new RawAdsClient(address, options);
  t.after(() => client.close());
  return client;
}

/** A raw HTTP/2 connection (no gRPC client library in the way of what the server does to it). */
function rawSession(
  t: TestContext,
  address: string,
  settings: http2.Settings = {},
): http2.ClientHttp2Session {
  const session = http2.connect(`http://${address}`, { settings });
  session.on('error', () => {});
  t.after(() => session.destroy());
  return session;
}

function framed(msg: Buffer): Buffer {
  const frame = Buffer.alloc(5 + msg.length);
  frame.writeUInt32BE(msg.length, 1);
  msg.copy(frame, 5);
  return frame;
}

/** Opens an ADS stream on `session` and sends one request; the stream is never read. */
function rawStream(session: http2.ClientHttp2Session, request: object): http2.ClientHttp2Stream {
  const stream = session.request({
    ':method': 'POST',
    ':path': ADS_PATH,
    'content-type': 'application/grpc',
    te: 'trailers',
  });
  stream.on('error', () => {});
  stream.write(framed(encodeDiscoveryRequest(request)));
  return stream;
}

// The secure port, for the tests that need certificates.
let dir: string;
let store: Store;
let securePlane: InProcessPlane;
let securePort: SecurePort;
let secureAddress: string;
let rootPem: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-limits-'));
  store = Store.open({ dataDir: dir, logger: silentLogger });
  securePlane = await startInProcessPlane({ limits: { maxStreamsPerPeer: 2 } });
  const ca = await CertificateAuthority.open({ material: store.ca, trustDomain: 'cluster.local' });
  rootPem = ca.trustBundle();
  securePort = await SecurePort.start({
    ca,
    store: new SqliteSharedStore(store),
    services: [securePlane.ads],
    host: '127.0.0.1',
    port: 0,
    serverSans: ['localhost', '127.0.0.1'],
    logger: silentLogger,
  });
  secureAddress = `127.0.0.1:${securePort.port}`;
});

after(async () => {
  await securePort.stop();
  await securePlane.stop();
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function certified(): Promise<grpc.ChannelCredentials> {
  const keys = await generateKeyPair('ec-p256');
  const { token } = createJoinToken(store.joinTokens, ID, 3600_000, 1);
  const res = await requestCertificate({
    address: secureAddress,
    rootPem,
    csrPem: await createCsr(keys, ID),
    ttlSeconds: 3600,
    token,
  });
  return grpc.credentials.createSsl(
    Buffer.from(rootPem),
    Buffer.from(await privateKeyPem(keys.privateKey)),
    Buffer.from(res.certChain[0] ?? ''),
  );
}

const ordersNode = (id: string): object => ({
  id,
  cluster: 'vm',
  user_agent_name: 'gRPC limits-test',
  metadata: { fields: { NAMESPACE: { stringValue: 'shop' }, SERVICE_ACCOUNT: { stringValue: 'orders' } } },
});

test('secure port: a stream without a client certificate is refused as it opens, before any request', async () => {
  const client = new grpc.Client(secureAddress, grpc.credentials.createSsl(Buffer.from(rootPem)));
  const calls: grpc.ClientDuplexStream<Buffer, Buffer>[] = [];
  try {
    const statuses = await within(
      Promise.all(
        Array.from({ length: 50 }, () => {
          const call = client.makeBidiStreamRequest(ADS_PATH, identity, identity);
          calls.push(call);
          call.on('error', () => {});
          // Nothing is written: the refusal may not wait for a request.
          return new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
        }),
      ),
      10_000,
      'status for every stream',
    );
    for (const s of statuses) {
      assert.equal(s.code, grpc.status.UNAUTHENTICATED);
      assert.match(s.details, /no client certificate/);
    }
    assert.equal(streamCount(securePlane), 0, 'the server holds none of them');
  } finally {
    for (const c of calls) c.cancel();
    client.close();
  }
});

test('secure port: streams are capped per workload identity (--max-streams-per-peer)', async () => {
  const creds = await certified();
  // Separate connections: the cap is per identity, not per connection.
  const clients = Array.from(
    { length: 3 },
    () => new grpc.Client(secureAddress, creds, { 'grpc.use_local_subchannel_pool': 1 }),
  );
  const calls = clients.map((c) => c.makeBidiStreamRequest(ADS_PATH, identity, identity));
  try {
    const answers = calls.map(
      (call) =>
        new Promise<string>((resolve) => {
          call.on('data', () => resolve('response'));
          call.on('status', (s: grpc.StatusObject) => resolve(`${grpc.status[s.code]} ${s.details}`));
          call.on('error', () => {});
        }),
    );
    for (const [i, call] of calls.entries())
      call.write(encodeDiscoveryRequest({ node: ordersNode(`orders-${i}`), type_url: CLUSTER }));
    const got = await within(Promise.all(answers), 10_000, 'answer on every stream');
    assert.equal(got.filter((a) => a === 'response').length, 2, got.join('; '));
    const refused = got.find((a) => a !== 'response') ?? '';
    assert.match(
      refused,
      /^RESOURCE_EXHAUSTED spiffe:\/\/cluster\.local\/ns\/shop\/sa\/orders already holds 2/,
    );
  } finally {
    for (const c of calls) c.cancel();
    for (const c of clients) c.close();
  }
});

test('plaintext port: streams are capped per remote address; a closed one frees its slot', async (t) => {
  const p = await plane(t, { limits: { maxStreamsPerPeer: 3 } });
  const clients = Array.from({ length: 3 }, () => connect(t, p.address));
  for (const [i, c] of clients.entries()) {
    c.send({ node: grpcNode(`peer-${i}`), type_url: CLUSTER, resource_names: [] });
    await c.next();
  }
  const fourth = connect(t, p.address);
  fourth.send({ node: grpcNode('peer-3'), type_url: CLUSTER, resource_names: [] });
  const status = await fourth.status();
  assert.equal(status.code, grpc.status.RESOURCE_EXHAUSTED);
  assert.match(status.details, /^127\.0\.0\.1 already holds 3 ADS streams \(--max-streams-per-peer\)/);
  clients[0]?.close();
  await eventually(() => streamCount(p) === 2, { what: 'the closed stream is gone' });
  const fifth = connect(t, p.address);
  fifth.send({ node: grpcNode('peer-4'), type_url: CLUSTER, resource_names: [] });
  assert.equal((await fifth.next()).type_url, CLUSTER);
});

test('a stream that sends no request within --first-request-timeout is ended; one that did stays', async (t) => {
  const p = await plane(t, { limits: { firstRequestTimeoutMs: 300 } });
  const talker = connect(t, p.address);
  talker.send({ node: grpcNode('talker'), type_url: CLUSTER, resource_names: [] });
  await talker.next();
  const silent = connect(t, p.address, { 'grpc.use_local_subchannel_pool': 1 });
  const status = await silent.status();
  assert.equal(status.code, grpc.status.DEADLINE_EXCEEDED);
  assert.match(status.details, /no request within 300 ms .*--first-request-timeout/);
  // The talker opened first, so a timer of its own would have ended it by now; its probe answered
  // shows it is still served.
  await talker.expectSilence();
  assert.equal(streamCount(p), 1, 'the stream that asked is still served');
});

test('HTTP/2: one connection has at most --max-concurrent-streams streams open', async (t) => {
  const p = await plane(t, { transport: { maxConcurrentStreams: 5 } });
  const session = rawSession(t, p.address);
  // Opened only once the server's SETTINGS arrived: before them a client may assume no limit.
  await new Promise((resolve) => session.once('remoteSettings', resolve));
  const streams = Array.from({ length: 8 }, (_, i) =>
    rawStream(session, { node: grpcNode(`s-${i}`), type_url: CLUSTER }),
  );
  await eventually(() => streamCount(p) === 5, { what: 'five streams open' });
  // The server answers a PING only after every frame sent before it on the connection: had the
  // client been allowed to open the other three, the server would hold them by then.
  await new Promise<void>((resolve, reject) => session.ping((err) => (err ? reject(err) : resolve())));
  assert.equal(streamCount(p), 5, 'the other three wait for a slot');
  streams[0]?.close();
  await eventually(() => streamCount(p) === 5 && !p.ads.streamList().some((s) => s.proxy?.id === 's-0'), {
    what: 'a waiting stream takes the freed slot',
  });
});

test('a connection without streams is closed after --max-connection-idle', async (t) => {
  const p = await plane(t, { transport: { maxConnectionIdleMs: 300 } });
  const session = rawSession(t, p.address);
  await new Promise<void>((resolve) => session.once('connect', () => resolve()));
  await eventually(() => session.closed || session.destroyed, { what: 'the idle connection closed' });
});

test('the server pings every --keepalive-time', async (t) => {
  const p = await plane(t, { transport: { keepaliveTimeMs: 200 } });
  const session = rawSession(t, p.address);
  rawStream(session, { node: grpcNode('pinged'), type_url: CLUSTER });
  let pings = 0;
  session.on('ping', () => (pings += 1));
  await eventually(() => pings >= 2, { what: 'two pings from the server' });
});

test('a client that pings faster than --keepalive-min-ping-interval is sent GOAWAY too_many_pings', async (t) => {
  const p = await plane(t, { transport: { minPingIntervalMs: 10_000, maxPingStrikes: 2 } });
  const session = rawSession(t, p.address);
  rawStream(session, { node: grpcNode('pinger'), type_url: CLUSTER });
  await eventually(() => streamCount(p) === 1, { what: 'the stream is open' });
  const goaway = new Promise<{ code: number; data: string }>((resolve) =>
    session.on('goaway', (code: number, _last: number, data?: Buffer) =>
      resolve({ code, data: data?.toString() ?? '' }),
    ),
  );
  for (let i = 0; i < 5 && !session.destroyed; i++) {
    session.ping(() => {});
    await sleep(20);
  }
  assert.deepEqual(await within(goaway, 10_000, 'GOAWAY'), {
    code: http2.constants.NGHTTP2_ENHANCE_YOUR_CALM,
    data: 'too_many_pings',
  });
  await eventually(() => streamCount(p) === 0, { what: 'its stream is gone' });
});

test('Envoy streams that never read share one response body instead of holding a copy each', async (t) => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const p = await plane(t);
  for (let i = 0; i < 1000; i++)
    p.mock.putService(mockService(`svc-${i}.stuck.internal`, [servicePort('grpc', 7070)]));
  const envoy = (id: string): object => ({
    id: `sidecar~10.8.0.1~${id}~default.svc.cluster.local`,
    cluster: 'stuck',
    user_agent_name: 'envoy',
  });
  const probe = connect(t, p.address);
  probe.send({ node: envoy('probe'), type_url: CLUSTER, resource_names: [] });
  const body = (await probe.next()).resources.reduce((n, r) => n + r.value.length, 0);
  assert.ok(body > 200_000, `a large CDS response (${body} bytes)`);
  gc();
  const before = process.memoryUsage().arrayBuffers;
  const stuck = 40;
  for (let i = 0; i < stuck; i++)
    rawStream(rawSession(t, p.address, { initialWindowSize: 0 }), {
      node: envoy(`stuck-${i}`),
      type_url: CLUSTER,
    }).pause();
  // Each has been answered: its response is written and waits on flow control.
  await eventually(
    () => p.ads.connectionList().filter((c) => c.state.typeState(CLUSTER)?.sent).length === stuck + 1,
    {
      what: 'every stuck stream answered',
    },
  );
  gc();
  const held = process.memoryUsage().arrayBuffers - before;
  assert.ok(
    held < 5 * body,
    `${stuck} stuck streams hold ${(held / 1024).toFixed(0)} KiB beyond the shared body (${(body / 1024).toFixed(0)} KiB); one copy each would be ${((stuck * body) / 1024).toFixed(0)} KiB`,
  );
});
