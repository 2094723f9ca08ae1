// Two `portolan serve` replicas on one real PostgreSQL (Debian `postgresql`, started by the test on
// a free loopback port as the `postgres` user, stopped by pid), with the real commands: one CA root
// for both, a token created once enrolls on either replica and renews on the other, a single-use
// token raced on both issues one certificate, a revocation closes the secure stream on the replica
// the workload is connected to, and with PostgreSQL stopped both replicas keep serving xDS and
// renewing known workloads while new enrollments are refused with UNAVAILABLE, until it returns.
// Then failover: a real @grpc/grpc-js-xds client whose bootstrap names both replicas moves to B
// when A is killed -9, keeps routing, and follows an endpoint edit made after the failover; the
// singleton jobs' lease passes to B. The same for a `portolan agent` given both replicas
// (--xds-addr A,B), with a proxyless client behind it. Auto-registration shared: a VM registered
// through A is an endpoint for B's clients, and B (leading) removes it after the grace once A dies.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import pg from 'pg';
import { eventually } from '../support/eventually.js';
import {
  certArgs,
  database,
  getJson,
  newToken,
  ok,
  postgres,
  portolan,
  replica,
  root,
  secureStream,
  serialOf,
  usePostgres,
  vmDir,
} from './ha-support.js';

usePostgres();

test('two replicas on one PostgreSQL: one root, a token enrolls on either and renews on the other, a single-use token raced on both issues one certificate', async (t) => {
  const store = await database();
  const [a, b] = await Promise.all([replica(t, 'a', store), replica(t, 'b', store)]);
  const rootA = await ok(['ca', 'root', '--store', store]);
  assert.match(rootA, /BEGIN CERTIFICATE/);
  assert.equal(await ok(['ca', 'root', '--store', store]), rootA, 'portolan ca root is the same every time');

  // Created with the command, enrolled through B, renewed through A (the enrollment is shared).
  const vm = await vmDir(store, 'orders');
  await ok(certArgs(b.secure, vm, ['--token', await newToken(store, 'orders')]));
  const firstSerial = serialOf(vm);
  // Both replicas serve certificates that chain to the one root (the CLI checks the chain).
  assert.equal(readFileSync(join(vm, 'out', 'root-cert.pem'), 'utf8').trim(), rootA.trim());
  await ok(certArgs(a.secure, vm));
  assert.notEqual(serialOf(vm), firstSerial, 'renewed on the other replica');

  // A single-use token, used on both replicas at once: exactly one certificate.
  const token = await newToken(store, 'payments');
  const [vmA, vmB] = await Promise.all([vmDir(store, 'race-a'), vmDir(store, 'race-b')]);
  const runs = await Promise.all([
    portolan(certArgs(a.secure, vmA, ['--token', token])),
    portolan(certArgs(b.secure, vmB, ['--token', token])),
  ]);
  assert.deepEqual(
    runs.map((r) => r.code === 0).sort(),
    [false, true],
    `exactly one enrollment succeeds: ${runs.map((r) => r.stderr).join(' | ')}`,
  );
  assert.match(runs.find((r) => r.code !== 0)?.stderr ?? '', /used up/);

  // Each replica heartbeats; either lists both.
  const view = await eventually(async () => {
    const v = await getJson(`${a.httpBase}/debug/replicas`);
    const names = (v.replicas as { replica: string }[]).map((r) => r.replica).sort();
    assert.deepEqual(names, ['a', 'b']);
    return v;
  });
  assert.equal((view.store as { state: string }).state, 'up');
  const leaders = await Promise.all(
    [a, b].map(async (r) => (await getJson(`${r.httpBase}/debug/replicas`)).leader),
  );
  assert.equal(leaders.filter(Boolean).length, 1, 'one replica leads the singleton jobs');
});

test('a revocation written through the shared store closes the secure stream on the replica the workload is connected to', async (t) => {
  const store = await database();
  const [a, b] = await Promise.all([replica(t, 'a', store), replica(t, 'b', store)]);
  const vm = await vmDir(store, 'cart');
  await ok(certArgs(b.secure, vm, ['--token', await newToken(store, 'cart')]));
  const stream = secureStream(a.secure, vm, 'cart');
  t.after(() => stream.close());
  await eventually(() => assert.ok(stream.responses.length > 0, 'the stream to A is serving'));
  // The proxies connected to A appear in /debug/replicas (from A's heartbeat), seen from B.
  await eventually(async () => {
    const v = await getJson(`${b.httpBase}/debug/replicas`);
    const rowA = (v.replicas as { replica: string; proxies: string[] }[]).find((r) => r.replica === 'a');
    assert.deepEqual(rowA?.proxies, ['cart-vm']);
  });
  const proxyStatus = await ok(['proxy-status', '--http-addr', b.httpBase.replace('http://', '')]);
  assert.match(proxyStatus, /replica b( \(leader\))?, shared store postgres up/);
  assert.match(proxyStatus, /^a\s+\S+ ago\s+cart-vm\s*$/m, 'the proxy connected to A, from B');

  const started = performance.now();
  await ok(['cert', 'revoke', '--serial', serialOf(vm), '--reason', 'stolen', '--store', store]);
  const status = await eventually(
    () => {
      assert.ok(stream.isEnded(), 'the secure stream on A is closed');
      return stream.ended;
    },
    { timeoutMs: 15_000, intervalMs: 20 },
  );
  t.diagnostic(
    `cert revoke (shared store) → stream on replica A closed: ${(performance.now() - started).toFixed(0)} ms`,
  );
  assert.equal(status.code, grpc.status.UNAUTHENTICATED);
  // Renewal is refused on either replica.
  for (const r of [a, b]) assert.match((await portolan(certArgs(r.secure, vm))).stderr, /revoked/);
});

test('PostgreSQL stopped for 30 s: both replicas keep serving xDS and renewing known workloads; new enrollments get UNAVAILABLE; when it returns, a new enrollment works', async (t) => {
  const store = await database();
  // Each replica watches its own copy of the config directory, beside the mock registry.
  const dirs = ['a', 'b'].map((n) => {
    const dir = join(root, `outage-config-${n}`);
    mkdirSync(dir, { recursive: true });
    return dir;
  });
  const withConfig = (dir: string): string[] => ['--registries', 'mock,config', '--config-dir', dir];
  const [a, b] = await Promise.all([
    replica(t, 'a', store, withConfig(dirs[0] ?? '')),
    replica(t, 'b', store, withConfig(dirs[1] ?? '')),
  ]);
  const vm = await vmDir(store, 'known');
  await ok(certArgs(a.secure, vm, ['--token', await newToken(store, 'known')]));
  await ok(certArgs(b.secure, vm)); // B has read this enrollment too
  const pending = await newToken(store, 'late');
  const late = await vmDir(store, 'late');

  await postgres.stop();
  let restarted = false;
  t.after(async () => {
    if (!restarted) await postgres.start();
  });
  const stoppedAt = performance.now();
  // Both replicas say so, and stay ready for xDS.
  for (const r of [a, b]) {
    await eventually(
      async () => {
        const res = await fetch(`${r.httpBase}/ready`, { signal: AbortSignal.timeout(5000) });
        assert.equal(res.status, 200);
        assert.match(await res.text(), /store: postgres unreachable/);
      },
      { timeoutMs: 20_000 },
    );
    const registryz = await getJson(`${r.httpBase}/debug/registryz`);
    assert.equal((registryz.store as { state: string }).state, 'unreachable');
  }
  // A new enrollment is refused, saying why.
  const refused = await portolan(certArgs(b.secure, late, ['--token', pending]));
  assert.notEqual(refused.code, 0);
  assert.match(refused.stderr, /unreachable/);
  // A known workload renews on both replicas.
  for (const r of [a, b]) await ok(certArgs(r.secure, vm));
  // xDS goes on: a mock service added on A reaches a secure stream on A.
  const stream = secureStream(a.secure, vm, 'known');
  t.after(() => stream.close());
  const clusters = await eventually(() => {
    const last = stream.responses.at(-1);
    assert.ok(last, 'secure xDS is served without the database');
    return last.resources;
  });
  const res = await fetch(`${a.httpBase}/mock/services/down.shop.internal`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ports: [{ name: 'http', number: 80, protocol: 'HTTP' }] }),
    signal: AbortSignal.timeout(5000),
  });
  assert.ok(res.status < 300, `mock service added: ${res.status}`);
  const withMock = await eventually(() => {
    const grown = stream.responses.find((r) => r.resources > clusters);
    assert.ok(grown, "the new service's cluster is pushed while PostgreSQL is down");
    return grown.resources;
  });
  // And a ServiceEntry written to the config directories (every replica's copy) reaches it too.
  for (const dir of dirs)
    writeFileSync(
      join(dir, 'outage.yaml'),
      `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: outage, namespace: default }
spec:
  hosts: [outage.ha.internal]
  ports: [{ number: 80, name: http, protocol: HTTP }]
  resolution: STATIC
  endpoints: [{ address: 10.9.0.1 }]
`,
    );
  await eventually(
    () =>
      assert.ok(
        stream.responses.some((r) => r.resources > withMock),
        "the config directory's new service is pushed while PostgreSQL is down",
      ),
    { timeoutMs: 15_000 },
  );
  const left = 30_000 - (performance.now() - stoppedAt);
  if (left > 0) await sleep(left);
  await ok(certArgs(a.secure, vm)); // still renewing after 30 s

  await postgres.start();
  restarted = true;
  const enrolled = await eventually(
    () =>
      portolan(certArgs(b.secure, late, ['--token', pending])).then((r) => {
        assert.equal(r.code, 0, r.stderr);
        return r;
      }),
    { timeoutMs: 30_000, intervalMs: 1000 },
  );
  assert.equal(enrolled.code, 0);
  for (const r of [a, b])
    await eventually(
      async () => {
        const registryz = await getJson(`${r.httpBase}/debug/registryz`);
        assert.equal((registryz.store as { state: string }).state, 'up');
      },
      { timeoutMs: 20_000 },
    );
});

test('a database from a newer Portolan is refused by serve and by the commands, naming both versions', async (t) => {
  const store = await database();
  await ok(['ca', 'root', '--store', store]); // creates the schema
  const client = new pg.Client({ connectionString: store });
  await client.connect();
  try {
    await client.query('UPDATE portolan_schema SET version = 99');
  } finally {
    await client.end();
  }
  const listed = await portolan(['token', 'list', '--store', store]);
  assert.equal(listed.code, 2);
  assert.match(listed.stderr, /schema version 99 is newer than this Portolan understands/);
  await assert.rejects(
    () => replica(t, 'new', store),
    (err: unknown) => /schema version 99 is newer/.test(String(err)),
  );
});
