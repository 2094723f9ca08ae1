// Two files claiming one hostname or one resource identity: the established definition keeps it
// (Istio's oldest-wins), across edits and restarts; the newcomer is an error on its own file in
// /debug/configz and nothing served changes. A newly added file used to take a host over because
// its name sorted first, while the old owner's file still showed `ok`. Real directories, real
// chokidar events, and a real SQLite store for the restart.
import assert from 'node:assert/strict';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { claimsOf, resolveClaims } from '../../../config-dir/claims.js';
import { loadConfigFile } from '../../../config-dir/load-file.js';
import { ConfigDirRegistry } from '../../../config-dir/registry.js';
import { silentLogger } from '../../../log/logger.js';
import type { ChangeEvent } from '../../../model/change.js';
import { Store } from '../../../store/store.js';
import { eventually } from '../../support/eventually.js';
import { makeTempDir, workloadEntry } from './helpers.js';

const HOST = 'echo.example.internal';

const serviceEntry = (
  name: string,
  hosts: readonly string[],
  address: string,
): string => `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ${name}}
spec:
  hosts:
${hosts.map((h) => `    - ${h}`).join('\n')}
  resolution: STATIC
  ports: [{name: grpc, number: 50051, protocol: GRPC}]
  endpoints: [{address: ${address}}]
`;

type Tmp = Awaited<ReturnType<typeof makeTempDir>>;

async function registryOn(t: TestContext, tmp: Tmp, store?: Store): Promise<ConfigDirRegistry> {
  const registry = new ConfigDirRegistry({
    dir: tmp.dir,
    debounceMs: 30,
    ...(store && { history: store.history }),
  });
  t.after(() => registry.stop());
  await registry.start();
  return registry;
}

const addresses = (registry: ConfigDirRegistry, host: string): string[] | undefined =>
  registry
    .snapshot()
    .endpoints.get(host)
    ?.map((e) => e.address);

const statusOf = (registry: ConfigDirRegistry) =>
  Object.fromEntries(registry.debugState().files.map((f) => [f.path, f.status]));

test('a new file that sorts first does not take a served host: it is an error on that file, nothing served changes', async (t) => {
  const tmp = await makeTempDir();
  t.after(() => tmp.cleanup());
  await tmp.write('m-echo.yaml', serviceEntry('echo', [HOST], '10.0.0.1'));
  const registry = await registryOn(t, tmp);
  const events: ChangeEvent[] = [];
  registry.onChange((e) => events.push(e));

  await tmp.write('a-takeover.yaml', serviceEntry('takeover', [HOST, 'fresh.example.internal'], '10.0.0.9'));
  await eventually(() => assert.equal(statusOf(registry)['a-takeover.yaml'], 'error'), {
    what: 'the newcomer to be reported',
  });
  await registry.settled();
  assert.deepEqual(addresses(registry, HOST), ['10.0.0.1'], 'the established definition is served');
  assert.equal(
    registry.snapshot().services.has('fresh.example.internal'),
    false,
    'the file is held back whole',
  );
  assert.deepEqual(events, [], 'nothing served changed');
  const [held] = registry.debugState().files.filter((f) => f.path === 'a-takeover.yaml');
  assert.deepEqual(
    held?.errors.map((e) => [e.line, e.path]),
    [[6, 'spec.hosts[0]']],
  );
  assert.match(
    held?.errors[0]?.message ?? '',
    /^host echo\.example\.internal is already served by ServiceEntry\/default\/echo \(m-echo\.yaml:1\)/,
  );
  assert.equal(statusOf(registry)['m-echo.yaml'], 'ok');
  assert.deepEqual(registry.debugState().conflicts, [
    {
      type: 'duplicate-host',
      subject: HOST,
      kept: { resource: 'ServiceEntry/default/echo', file: 'm-echo.yaml', line: 1 },
      ignored: { resource: 'ServiceEntry/default/takeover', file: 'a-takeover.yaml', line: 1 },
    },
  ]);
  assert.equal(registry.status().stale, true, 'a file in error makes the registry stale');

  // The holder lets go: the held file applies, without being edited.
  await rm(join(tmp.dir, 'm-echo.yaml'));
  await eventually(() => assert.deepEqual(addresses(registry, HOST), ['10.0.0.9']), {
    what: 'the held file to take the host once it is free',
  });
  assert.deepEqual(statusOf(registry), { 'a-takeover.yaml': 'ok' });
  assert.deepEqual(registry.debugState().conflicts, []);
});

test('a held-back edit keeps the file’s previous version in force', async (t) => {
  const tmp = await makeTempDir();
  t.after(() => tmp.cleanup());
  await tmp.write('m-echo.yaml', serviceEntry('echo', [HOST], '10.0.0.1'));
  await tmp.write('b-other.yaml', serviceEntry('other', ['other.example.internal'], '10.0.1.1'));
  const registry = await registryOn(t, tmp);

  await tmp.write('b-other.yaml', serviceEntry('other', ['other.example.internal', HOST], '10.0.1.2'));
  await eventually(() => assert.equal(statusOf(registry)['b-other.yaml'], 'error'));
  await registry.settled();
  assert.deepEqual(addresses(registry, 'other.example.internal'), ['10.0.1.1'], 'the old version stays');
  assert.deepEqual(addresses(registry, HOST), ['10.0.0.1']);
});

test('a resource identity defined by a newcomer is held back the same way', async (t) => {
  const tmp = await makeTempDir();
  t.after(() => tmp.cleanup());
  const vm = (address: string) => workloadEntry('vm-1', `  address: ${address}\n  labels: {app: echo}\n`);
  await tmp.write('z-vm.yaml', vm('10.0.0.1'));
  const registry = await registryOn(t, tmp);
  await tmp.write('a-vm.yaml', vm('10.0.0.2'));
  await eventually(() => assert.equal(statusOf(registry)['a-vm.yaml'], 'error'));
  await registry.settled();
  assert.deepEqual(
    registry.debugState().resources.workloadEntries.map((w) => [w.file, w.spec.address]),
    [['z-vm.yaml', '10.0.0.1']],
  );
  assert.match(
    registry.debugState().files.find((f) => f.path === 'a-vm.yaml')?.errors[0]?.message ?? '',
    /^WorkloadEntry\/default\/vm-1 is already defined in z-vm\.yaml:1;/,
  );
});

test('a held-back file taken when its holder lets go: the one event names the rules of the file not edited', async (t) => {
  const tmp = await makeTempDir();
  t.after(() => tmp.cleanup());
  const vs = `apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: echo}\nspec:\n  hosts: [routes.example.internal]\n  http: [{route: [{destination: {host: ${HOST}}}]}]\n`;
  await tmp.write('z-echo.yaml', serviceEntry('echo-old', [HOST], '10.0.0.1'));
  const registry = await registryOn(t, tmp);
  // Held back whole: its ServiceEntry claims the host z-echo.yaml holds, so its VirtualService waits too.
  await tmp.write('a-echo.yaml', `${serviceEntry('echo', [HOST], '10.0.0.2')}---\n${vs}`);
  await eventually(() => assert.equal(statusOf(registry)['a-echo.yaml'], 'error'));
  await registry.settled();
  assert.deepEqual(registry.meshConfig().virtualServices, []);
  const events: ChangeEvent[] = [];
  registry.onChange((e) => events.push(e));
  // Only z-echo.yaml is edited (removed); a-echo.yaml's waiting version steps in, VirtualService and all.
  await rm(join(tmp.dir, 'z-echo.yaml'));
  await eventually(() => assert.deepEqual(addresses(registry, HOST), ['10.0.0.2']));
  await registry.settled();
  assert.deepEqual(
    events.map((e) => [[...e.endpoints], [...e.rules], [...e.kinds], e.everything]),
    [[[HOST], ['routes.example.internal'], ['virtualServices'], false]],
  );
});

test('across a restart: a file added while the server was down does not take over either', async (t) => {
  const tmp = await makeTempDir();
  t.after(() => tmp.cleanup());
  const dataDir = join(tmp.dir, 'data');
  await mkdir(dataDir);
  const config = join(tmp.dir, 'config');
  const write = (rel: string, text: string) => tmp.write(join('config', rel), text);
  await write('m-echo.yaml', serviceEntry('echo', [HOST], '10.0.0.1'));

  // First run: m-echo.yaml is accepted (and the store keeps it).
  {
    const store = Store.open({ dataDir, logger: silentLogger });
    const registry = new ConfigDirRegistry({ dir: config, history: store.history });
    await registry.start();
    assert.deepEqual(addresses(registry, HOST), ['10.0.0.1']);
    await registry.stop();
    store.close();
  }
  // While it is down, a file that sorts first claims the host.
  await write('a-takeover.yaml', serviceEntry('takeover', [HOST], '10.0.0.9'));

  for (const run of ['second', 'third']) {
    const store = Store.open({ dataDir, logger: silentLogger });
    const registry = new ConfigDirRegistry({ dir: config, history: store.history });
    try {
      await registry.start();
      assert.deepEqual(addresses(registry, HOST), ['10.0.0.1'], `${run} run: the established file keeps it`);
      assert.deepEqual(statusOf(registry), { 'a-takeover.yaml': 'error', 'm-echo.yaml': 'ok' }, run);
    } finally {
      await registry.stop();
      store.close();
    }
  }
});

test('without a store, a fresh start keeps the old rule among newcomers: the first by path', async (t) => {
  const tmp = await makeTempDir();
  t.after(() => tmp.cleanup());
  await tmp.write('b.yaml', serviceEntry('b', [HOST], '10.0.0.2'));
  await tmp.write('a.yaml', serviceEntry('a', [HOST], '10.0.0.1'));
  const registry = await registryOn(t, tmp);
  assert.deepEqual(addresses(registry, HOST), ['10.0.0.1']);
  assert.deepEqual(statusOf(registry), { 'a.yaml': 'ok', 'b.yaml': 'error' });
});

test('resolveClaims: two files swapping hosts in one batch both apply; a clash with the holder does not', () => {
  const load = (path: string, name: string, host: string) =>
    loadConfigFile(path, serviceEntry(name, [host], '10.0.0.1'));
  const a1 = load('a.yaml', 'a', 'x.example');
  const b1 = load('b.yaml', 'b', 'y.example');
  const swapped = resolveClaims([
    { path: 'a.yaml', good: a1, candidate: load('a.yaml', 'a', 'y.example') },
    { path: 'b.yaml', good: b1, candidate: load('b.yaml', 'b', 'x.example') },
  ]);
  assert.deepEqual([...swapped.heldBack.keys()], []);

  const clash = resolveClaims([
    { path: 'a.yaml', good: a1, candidate: undefined },
    { path: 'b.yaml', good: b1, candidate: load('b.yaml', 'b', 'x.example') },
    { path: '0.yaml', good: undefined, candidate: load('0.yaml', 'zero', 'x.example') },
  ]);
  assert.deepEqual([...clash.heldBack.keys()].sort(), ['0.yaml', 'b.yaml']);
  assert.deepEqual([...claimsOf(a1).keys()], ['resource ServiceEntry/default/a', 'host x.example']);
});
