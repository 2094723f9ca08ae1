import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigDirRegistry } from '../../../config-dir/registry.js';
import { silentLogger } from '../../../log/logger.js';
import type { WorkloadEntryResource, WorkloadGroupResource, WorkloadGroupSpec } from '../../../mesh/types.js';
import {
  AutoRegistration,
  type AgentClaim,
  type RegistrationStore,
} from '../../../registration/auto-registration.js';
import { peerAddress } from '../../../cli/auto-registration.js';
import { eventually } from '../../support/eventually.js';
import { ManualClock } from '../../support/manual-clock.js';
import { configResource } from '../../support/mesh-fixtures.js';
import { kindChanged } from '../../../model/change.js';

function group(name: string, spec: WorkloadGroupSpec, namespace = 'shop'): WorkloadGroupResource {
  return configResource('WorkloadGroup', name, spec, namespace, 'groups.yaml');
}

const ECHO = group('echo-vms', {
  metadata: { labels: { app: 'echo', version: 'v1' }, annotations: { team: 'a' } },
  template: { ports: { grpc: 9000 }, serviceAccount: 'echo', labels: { version: 'v2' }, weight: 2 },
});
const PROBED = group('probed', {
  template: { serviceAccount: 'echo' },
  probe: { tcpSocket: { port: 9000 } },
});

function claim(over: Partial<AgentClaim> = {}): AgentClaim {
  return {
    nodeId: 'echo.vm-1',
    group: 'echo-vms',
    namespace: 'shop',
    serviceAccount: 'echo',
    identity: 'spiffe://cluster.local/ns/shop/sa/echo',
    address: '10.0.0.7',
    ...over,
  };
}

class MemoryStore implements RegistrationStore {
  readonly rows = new Map<string, string>();
  all() {
    return [...this.rows].map(([key, value]) => ({ key, value }));
  }
  put(key: string, value: string) {
    this.rows.set(key, value);
  }
  delete(key: string) {
    this.rows.delete(key);
  }
}

function registry(
  groups: WorkloadGroupResource[],
  graceMs = 60_000,
  store?: RegistrationStore,
  clock?: ManualClock,
): AutoRegistration {
  return new AutoRegistration({
    groups: () => groups,
    graceMs,
    logger: silentLogger,
    ...(store && { store }),
    ...(clock && { clock }),
  });
}

test('a connected agent becomes a WorkloadEntry built from its group: metadata, template, its address', () => {
  const r = registry([ECHO]);
  let changes = 0;
  r.onWorkloadEntriesChange(() => changes++);
  r.connected('conn-1', claim());
  assert.equal(changes, 1);
  const [entry] = r.workloadEntries();
  assert.deepEqual(
    { ...entry, apiVersion: undefined },
    {
      kind: 'WorkloadEntry',
      apiVersion: undefined,
      name: 'echo-vms-10-0-0-7',
      namespace: 'shop',
      labels: { app: 'echo', version: 'v2' },
      annotations: { team: 'a', 'portolan.io/auto-registered-by': 'echo.vm-1' },
      spec: {
        ports: { grpc: 9000 },
        serviceAccount: 'echo',
        labels: { app: 'echo', version: 'v2' },
        weight: 2,
        address: '10.0.0.7',
      },
      file: '(auto-registered)',
      line: 0,
    },
  );
  assert.deepEqual(
    r.list().map((v) => [v.entry, v.node, v.state, v.health]),
    [['shop/echo-vms-10-0-0-7', 'echo.vm-1', 'connected', 'HEALTHY']],
  );
});

test('refusals: no verified identity, a group that does not exist, another service account, the bound', () => {
  const r = new AutoRegistration({
    groups: () => [ECHO],
    graceMs: 1000,
    logger: silentLogger,
    maxEntries: 1,
  });
  assert.equal(r.refusal(claim()), undefined);
  assert.match(r.refusal(claim({ identity: undefined })) ?? '', /needs a verified workload certificate/);
  assert.equal(r.refusal(claim({ group: 'nope' })), 'WorkloadGroup shop/nope does not exist');
  assert.equal(
    r.refusal(claim({ serviceAccount: 'cart', identity: 'spiffe://cluster.local/ns/shop/sa/cart' })),
    'WorkloadGroup shop/echo-vms is for service account echo, but this agent is spiffe://cluster.local/ns/shop/sa/cart',
  );
  // The group is looked up in the agent's own namespace.
  assert.equal(r.refusal(claim({ namespace: 'other' })), 'WorkloadGroup other/echo-vms does not exist');
  r.connected('c1', claim());
  assert.equal(r.refusal(claim()), undefined, 'the same VM again is not a new entry');
  assert.match(r.refusal(claim({ address: '10.0.0.8' })) ?? '', /maximum of 1 entries/);
  r.stop();
});

test('a disconnected agent keeps its entry for the grace period; a reconnect within it keeps it for good', () => {
  const clock = new ManualClock();
  const r = registry([ECHO], 150, undefined, clock);
  r.connected('c1', claim());
  r.disconnected('c1');
  assert.equal(r.workloadEntries().length, 1, 'kept while in grace');
  const [view] = r.list();
  assert.equal(view?.state, 'disconnected');
  assert.equal(view?.removeAt, new Date(clock.now() + 150).toISOString());
  clock.advance(100);
  r.connected('c2', claim());
  // A late close of the old stream does not touch the new one.
  r.disconnected('c1');
  clock.advance(300);
  assert.equal(r.workloadEntries().length, 1, 'the reconnect cancelled the removal');
  assert.equal(r.list()[0]?.state, 'connected');
  r.disconnected('c2');
  clock.advance(149);
  assert.equal(r.workloadEntries().length, 1, 'still in its grace period');
  clock.advance(1);
  assert.deepEqual(r.workloadEntries(), [], 'removed when the grace period is over');
  assert.deepEqual(r.list(), []);
  assert.equal(clock.pending, 0);
});

test('a probing group: UNHEALTHY until the first passing report, then the reports decide', () => {
  const r = registry([PROBED]);
  r.connected('c1', claim({ group: 'probed' }));
  const health = (): string | undefined => r.workloadEntries()[0]?.annotations['portolan.io/health'];
  assert.equal(health(), 'UNHEALTHY');
  assert.equal(r.list()[0]?.health, 'UNKNOWN');
  r.reportHealth('c1', true, '');
  assert.equal(health(), undefined);
  r.reportHealth('c1', false, 'dial tcp 10.0.0.7:9000: connection refused');
  assert.equal(health(), 'UNHEALTHY');
  assert.deepEqual(
    [r.list()[0]?.health, r.list()[0]?.reason],
    ['UNHEALTHY', 'dial tcp 10.0.0.7:9000: connection refused'],
  );
  // A report on a stream that holds nothing is ignored.
  r.reportHealth('c9', true, '');
  assert.equal(health(), 'UNHEALTHY');
});

test('entries follow their group: a deleted group takes them away, its return brings them back', () => {
  const groups = [ECHO];
  const r = registry(groups);
  r.connected('c1', claim());
  groups.length = 0;
  r.groupsChanged();
  assert.deepEqual(r.workloadEntries(), []);
  assert.equal(r.list()[0]?.groupExists, false);
  groups.push(group('echo-vms', { metadata: { labels: { app: 'echo2' } } }));
  r.groupsChanged();
  assert.deepEqual(r.workloadEntries()[0]?.labels, { app: 'echo2' });
});

test('registrations are stored; a new control plane restores them disconnected, for one grace period', () => {
  const store = new MemoryStore();
  const first = registry([PROBED], 60_000, store);
  first.connected('c1', claim({ group: 'probed' }));
  first.reportHealth('c1', true, '');
  first.stop();
  store.put('shop/garbage', '{not json');

  const clock = new ManualClock();
  const second = registry([PROBED], 200, store, clock);
  assert.equal(second.restore(), 1);
  assert.equal(store.rows.has('shop/garbage'), false, 'an unreadable row is dropped');
  assert.deepEqual(
    second.list().map((v) => [v.entry, v.state, v.health]),
    [['shop/probed-10-0-0-7', 'disconnected', 'HEALTHY']],
  );
  assert.equal(second.workloadEntries()[0]?.annotations['portolan.io/health'], undefined);
  clock.advance(199);
  assert.equal(second.workloadEntries().length, 1, 'kept for its fresh grace period');
  clock.advance(1);
  assert.deepEqual(second.workloadEntries(), []);
  assert.equal(store.rows.size, 0, 'removed from the store with the entry');
});

test('a restored registration whose agent reconnects within the grace is kept past it', () => {
  const store = new MemoryStore();
  const first = registry([ECHO], 60_000, store);
  first.connected('c1', claim());
  first.stop();
  const clock = new ManualClock();
  const second = registry([ECHO], 200, store, clock);
  assert.equal(second.restore(), 1);
  clock.advance(100);
  second.connected('c2', claim());
  clock.advance(10_000);
  assert.equal(second.workloadEntries().length, 1, 'the restored grace no longer removes it');
  assert.equal(second.list()[0]?.state, 'connected');
  assert.equal(store.rows.size, 1);
  assert.equal(clock.pending, 0, 'no grace timer left running');
});

/** A config directory with the echo ServiceEntry and the WorkloadGroup whose VMs it selects. */
function echoConfigDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-autoreg-'));
  writeFileSync(
    join(dir, 'echo.yaml'),
    [
      'apiVersion: networking.istio.io/v1',
      'kind: ServiceEntry',
      'metadata: {name: echo, namespace: shop}',
      'spec:',
      '  hosts: [echo.vm.internal]',
      '  resolution: STATIC',
      '  ports: [{name: grpc, number: 50051, protocol: GRPC}]',
      '  workloadSelector: {labels: {app: echo}}',
      '---',
      'apiVersion: networking.istio.io/v1',
      'kind: WorkloadGroup',
      'metadata: {name: echo-vms, namespace: shop}',
      'spec:',
      '  metadata: {labels: {app: echo}}',
      '  template: {serviceAccount: echo, ports: {grpc: 9000}}',
      '  probe: {tcpSocket: {port: 9000}}',
      '',
    ].join('\n'),
  );
  return dir;
}

test('the config registry selects auto-registered entries into ServiceEntries by label; a file entry wins a name clash', async (t) => {
  const dir = echoConfigDir();
  const config = new ConfigDirRegistry({ dir, debounceMs: 20 });
  const r = new AutoRegistration({
    groups: () => config.meshConfig().workloadGroups ?? [],
    graceMs: 60_000,
    logger: silentLogger,
  });
  config.addWorkloadEntries(r);
  config.onChange((e) => {
    if (kindChanged(e, 'workloadGroups')) r.groupsChanged();
  });
  t.after(async () => {
    r.stop();
    await config.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  await config.start();
  const endpoints = () => config.snapshot().endpoints.get('echo.vm.internal') ?? [];
  assert.deepEqual(endpoints(), []);
  r.connected('c1', claim());
  assert.deepEqual(
    endpoints().map((e) => [e.address, e.ports, e.health, e.serviceAccount]),
    [['10.0.0.7', { grpc: 9000 }, 'UNHEALTHY', 'echo']],
  );
  r.reportHealth('c1', true, '');
  assert.equal(endpoints()[0]?.health, 'HEALTHY');
  // A file's WorkloadEntry of the same namespace/name is the one served.
  writeFileSync(
    join(dir, 'vm.yaml'),
    'apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\nmetadata: {name: echo-vms-10-0-0-7, namespace: shop}\nspec: {address: 10.0.0.99, labels: {app: echo}}\n',
  );
  await eventually(() => endpoints().length === 1 && endpoints()[0]?.address === '10.0.0.99', {
    timeoutMs: 5000,
  });
});

test('entries that change while the config registry announces its load are selected right after it (warm start)', async (t) => {
  // As at a warm start: the restored entries are known only once the WorkloadGroups are, which the
  // registry's own first event announces; the selection must run again after that event.
  const dir = echoConfigDir();
  const config = new ConfigDirRegistry({ dir, debounceMs: 20 });
  t.after(async () => {
    await config.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  let entries: WorkloadEntryResource[] = [];
  const changed = new Set<() => void>();
  config.addWorkloadEntries({
    workloadEntries: () => entries,
    onWorkloadEntriesChange: (listener) => {
      changed.add(listener);
      return () => changed.delete(listener);
    },
  });
  config.onChange((e) => {
    if (!kindChanged(e, 'workloadGroups') || entries.length > 0) return;
    entries = [
      configResource(
        'WorkloadEntry',
        'echo-vms-10-0-0-7',
        { address: '10.0.0.7', labels: { app: 'echo' }, serviceAccount: 'echo' },
        'shop',
      ),
    ];
    for (const listener of changed) listener();
  });
  await config.start();
  assert.deepEqual(
    (config.snapshot().endpoints.get('echo.vm.internal') ?? []).map((e) => e.address),
    ['10.0.0.7'],
  );
});

test('without --instance-ip, a VM registers with the address its connection comes from', () => {
  assert.equal(peerAddress('127.0.0.20:43210'), '127.0.0.20');
  assert.equal(peerAddress('ipv4:10.0.0.7:5000'), '10.0.0.7');
  assert.equal(peerAddress('[fd00::7]:5000'), 'fd00::7');
  assert.equal(peerAddress('[::ffff:10.0.0.8]:5000'), '10.0.0.8');
  assert.equal(peerAddress('fd00::9'), 'fd00::9');
});
