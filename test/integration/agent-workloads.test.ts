// Several workloads in one agent (agent/agent.ts as the CLI assembles it), against a control plane
// with its CA in process: each workload's outage behaviour and cache are its own (a client of each
// restarted during an outage is served its own last config, from its own cache directory); and
// `user=`: a workload's socket directory and sockets are given to its Unix user, so another user's
// process cannot connect (the kernel's check, run here with real uids: root runs the test, a child
// process runs as `daemon` and as `nobody`), and the agent refuses streams once the directory's
// permissions no longer keep others out. Without root the agent cannot give the sockets away and
// says so.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { startAgent, type RunningAgent, type WorkloadConfig } from '../../agent/agent.js';
import { SocketError, type SocketOwner } from '../../agent/unix-socket.js';
import { nodeIdOfKey } from '../../agent/xds/cache-key.js';
import { workloadIdentity } from '../../ca/identity.js';
import { silentLogger } from '../../log/logger.js';
import { CLUSTER } from '../../xds/proto/type-urls.js';
import { eventually } from '../support/eventually.js';
import { LocalAdsConnection, localNode } from '../support/local-ads-connection.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { resourceNames } from '../support/raw-ads-client.js';
import { getText, startSecurePlane, TRUST_DOMAIN, type SecurePlane } from './agent-helpers.js';

const NOBODY: SocketOwner = { user: 'nobody', uid: 65534, gid: 65534 };
const DAEMON = { uid: 1, gid: 1 };
const isRoot = process.getuid?.() === 0;

let cp: SecurePlane;
const agents: RunningAgent[] = [];
const connections: LocalAdsConnection[] = [];

before(async () => {
  cp = await startSecurePlane();
  cp.plane.mock.putService(mockService('cart.shop.svc', [servicePort('grpc', 7070)], { namespace: 'shop' }));
  cp.plane.mock.setEndpoints('cart.shop.svc', [endpoint('127.0.0.7', { grpc: 7070 })]);
});

after(async () => {
  for (const c of connections) c.close();
  for (const a of agents) await a.stop();
  await cp.stop();
});

function workload(base: string, name: string, owner?: SocketOwner): WorkloadConfig {
  return {
    name,
    certificate: {
      caAddress: cp.address,
      rootCertFile: cp.rootFile,
      outDir: join(base, 'certs', name),
      identity: workloadIdentity(TRUST_DOMAIN, 'shop', name),
      logger: silentLogger,
      token: cp.token('shop', name).token,
      backoff: { initialMs: 200, maxMs: 1000, jitter: 0 },
    },
    identity: { trustDomain: TRUST_DOMAIN, namespace: 'shop', serviceAccount: name },
    cacheDir: join(base, 'data', name, 'xds-cache'),
    xdsSocket: join(base, 'run', name, 'xds.sock'),
    sdsSocket: join(base, 'run', name, 'sds.sock'),
    ...(owner && { owner }),
  };
}

function start(base: string, workloads: WorkloadConfig[]): Promise<RunningAgent> {
  return startAgent({
    workloads,
    xdsAddress: cp.address,
    statusAddr: { host: '127.0.0.1', port: 0 },
    dataDir: join(base, 'data'),
    cache: { maxNodes: 64, maxBytes: 64 * 1024 * 1024 },
    maxLocalStreams: 64,
    fallbackMs: 300,
    upstreamBackoff: { initialMs: 100, maxMs: 1000, jitter: 0 },
    logger: silentLogger,
  });
}

function connection(socket: string): LocalAdsConnection {
  const c = new LocalAdsConnection(`unix:${socket}`);
  connections.push(c);
  return c;
}

/** Connects to `socket` from a child process running as `uid`/`gid`: 'connected' or the error code. */
function connectAs(socket: string, ids: { uid: number; gid: number }): Promise<string> {
  const script = `const s = require('node:net').connect(${JSON.stringify(socket)});
s.on('connect', () => { console.log('connected'); s.destroy(); });
s.on('error', (e) => console.log(e.code));`;
  return new Promise((resolve, reject) =>
    execFile(process.execPath, ['-e', script], { ...ids, timeout: 10_000 }, (err, out) =>
      err ? reject(new Error(`connect as uid ${ids.uid} failed: ${err.message}`)) : resolve(out.trim()),
    ),
  );
}

test('an outage: each workload serves its own clients from its own cache', async () => {
  const base = join(cp.dir, 'outage');
  const agent = await start(base, [workload(base, 'cart'), workload(base, 'web')]);
  agents.push(agent);
  await eventually(
    async () => (await getText(`http://${agent.addresses.status}/healthz/ready`)).status === 200,
    {
      timeoutMs: 15_000,
      what: 'both workloads ready',
    },
  );
  for (const name of ['cart', 'web']) {
    const s = connection(join(base, 'run', name, 'xds.sock')).open({
      node: localNode(`${name}-app`),
      type_url: CLUSTER,
    });
    const first = await s.next();
    s.send({ type_url: CLUSTER, version_info: first.version_info, response_nonce: first.nonce });
    await eventually(() => readdirSync(join(base, 'data', name, 'xds-cache')).length > 0, {
      what: `${name}'s cache written`,
    });
  }
  assert.deepEqual(
    agent.workloads.map((w) => w.cache.list().map((n) => nodeIdOfKey(n.nodeId))),
    [['cart-app'], ['web-app']],
    'each workload caches its own nodes',
  );

  await cp.stopSecurePort();
  try {
    await eventually(() => agent.workloads.every((w) => w.upstream.state === 'down'), {
      what: 'both workloads saw the control plane go',
    });
    const ready = await getText(`http://${agent.addresses.status}/healthz/ready`);
    assert.equal(ready.status, 200, ready.body);
    assert.match(ready.body, /^cart: serving from the cache: 1 node\(s\)/m);
    assert.match(ready.body, /^web: serving from the cache: 1 node\(s\)/m);
    // Restarted during the outage: each gets its config, from its own workload's cache.
    for (const name of ['cart', 'web']) {
      const again = connection(join(base, 'run', name, 'xds.sock')).open({
        node: localNode(`${name}-app`),
        type_url: CLUSTER,
      });
      assert.deepEqual(resourceNames(await again.next()), ['outbound|7070||cart.shop.svc']);
    }
    // A node cached by web is not served on cart's socket: cart's cache has no such entry.
    const stranger = connection(join(base, 'run', 'cart', 'xds.sock')).open({
      node: localNode('web-app'),
      type_url: CLUSTER,
    });
    await assert.rejects(stranger.next(1500), /no response within 1500 ms/);
  } finally {
    await cp.startSecurePort();
  }
});

test(
  isRoot
    ? 'user=: the socket directory is the user’s, another user cannot connect, loosened permissions refuse streams'
    : 'user=: without root (or CAP_CHOWN) the agent cannot give the sockets away, and says so',
  async () => {
    const base = join(cp.dir, 'owned');
    if (!isRoot) {
      await assert.rejects(start(base, [workload(base, 'cart', NOBODY)]), (err: unknown) => {
        assert.ok(err instanceof SocketError);
        assert.match(err.message, /user=nobody: cannot give .* the agent must run as root or with CAP_CHOWN/);
        return true;
      });
      return;
    }
    // The directories above the run dir let others pass, as /run does (mkdtemp makes them 0700).
    chmodSync(cp.dir, 0o711);
    mkdirSync(base, { mode: 0o711 });
    const agent = await start(base, [workload(base, 'cart', NOBODY), workload(base, 'web')]);
    agents.push(agent);
    const dir = join(base, 'run', 'cart');
    const xds = join(dir, 'xds.sock');
    const mode = (path: string): string => (statSync(path).mode & 0o777).toString(8);
    assert.deepEqual(
      [statSync(dir).uid, mode(dir), statSync(xds).uid, mode(xds), mode(join(dir, 'sds.sock'))],
      [NOBODY.uid, '770', NOBODY.uid, '600', '600'],
    );
    assert.equal(statSync(join(base, 'run')).mode & 0o001, 0o001, 'the run dir lets the user pass');
    assert.equal(statSync(join(base, 'run', 'web')).uid, 0, 'web (no user=) stays the agent’s');
    // The kernel's check: the workload's user connects, another user is refused.
    assert.equal(await connectAs(xds, NOBODY), 'connected');
    assert.equal(await connectAs(xds, DAEMON), 'EACCES');
    assert.equal(await connectAs(join(dir, 'sds.sock'), DAEMON), 'EACCES');

    // Permissions loosened behind the agent's back: it no longer serves there.
    chmodSync(dir, 0o777);
    try {
      const refused = connection(xds).open({ node: localNode('cart-app'), type_url: CLUSTER });
      const status = await refused.ended();
      assert.equal(status.code, grpc.status.PERMISSION_DENIED);
      assert.match(status.details, /no longer belongs to nobody alone \(uid 65534, mode 777\)/);
    } finally {
      chmodSync(dir, 0o770);
    }
    const served = connection(xds).open({ node: localNode('cart-app'), type_url: CLUSTER });
    assert.deepEqual(resourceNames(await served.next()), ['outbound|7070||cart.shop.svc']);
  },
);
