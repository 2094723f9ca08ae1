// The registry against a real directory and real chokidar events.
import { trafficLimitations } from '../../../xds/traffic/limitations.js';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { open, rm, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { test, type TestContext } from 'node:test';
import { pino } from 'pino';
import { ConfigDirRegistry, type ConfigDirOptions } from '../../../config-dir/registry.js';
import type { ReadFs } from '../../../config-dir/read-file.js';
import { changeOf, endpointsOnly, changedHosts, type ChangeEvent } from '../../../model/change.js';
import { eventually } from '../../support/eventually.js';
import { makeTempDir, workloadEntry } from './helpers.js';

const ECHO_SE = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: echo
spec:
  hosts: [echo.example.internal]
  resolution: STATIC
  ports:
    - name: grpc
      number: 50051
      protocol: GRPC
  workloadSelector:
    labels: {app: echo}
`;

const vm = (name: string, address: string) =>
  workloadEntry(name, `  address: ${address}\n  labels: {app: echo}\n`);

async function started(
  t: TestContext,
  files: Record<string, string> = {},
  options: Pick<ConfigDirOptions, 'logger' | 'readFs' | 'debounceMs'> = {},
) {
  const tmp = await makeTempDir();
  for (const [path, text] of Object.entries(files)) await tmp.write(path, text);
  const registry = new ConfigDirRegistry({ dir: tmp.dir, debounceMs: 30, ...options });
  t.after(async () => {
    await registry.stop();
    await tmp.cleanup();
  });
  await registry.start();
  // Changes after the initial load only.
  const events: ChangeEvent[] = [];
  registry.onChange((e) => events.push(e));
  return { ...tmp, registry, events };
}

/** A logger whose lines are kept, parsed, in `records`. */
function recordingLogger() {
  const records: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean))
        records.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { records, logger: pino({ level: 'info' }, sink) };
}

const addresses = (registry: ConfigDirRegistry, host: string) =>
  registry
    .snapshot()
    .endpoints.get(host)
    ?.map((e) => e.address);

test('an empty directory syncs with no services', async (t) => {
  const { registry } = await started(t);
  assert.equal(registry.hasSynced(), true);
  assert.equal(registry.snapshot().services.size, 0);
  assert.deepEqual(registry.debugState().files, []);
});

test('start() fails for a missing directory', async () => {
  const registry = new ConfigDirRegistry({ dir: join('/nonexistent', `portolan-${process.pid}`) });
  await assert.rejects(registry.start(), /config directory .*nonexistent/);
  assert.equal(registry.hasSynced(), false);
});

test('the initial scan is loaded, recursively, before start() resolves', async (t) => {
  const { registry } = await started(t, {
    'services/echo.yaml': ECHO_SE,
    'vms/a/vm-1.yml': vm('vm-1', '10.0.0.1'),
    'notes.txt': 'not config',
  });
  assert.equal(registry.hasSynced(), true);
  assert.deepEqual(addresses(registry, 'echo.example.internal'), ['10.0.0.1']);
  assert.deepEqual(
    registry.debugState().files.map((f) => [f.path, f.status, f.resources]),
    [
      ['services/echo.yaml', 'ok', ['ServiceEntry/default/echo']],
      ['vms/a/vm-1.yml', 'ok', ['WorkloadEntry/default/vm-1']],
    ],
  );
  const { lastSyncAt, ...status } = registry.status();
  assert.deepEqual(status, { synced: true, stale: false, services: 1, endpoints: 1 });
  assert.ok(Date.parse(lastSyncAt ?? '') > 0, 'lastSyncAt is a timestamp');
});

test('a file added later, in a new subdirectory, makes its services appear', async (t) => {
  const { registry, write, events } = await started(t);
  assert.equal(registry.snapshot().services.size, 0);
  await write('deep/er/echo.yaml', ECHO_SE);
  await eventually(() => registry.snapshot().services.has('echo.example.internal'), {
    timeoutMs: 5000,
    what: 'echo service',
  });
  assert.deepEqual(
    events.map((e) => [[...changedHosts(e)], endpointsOnly(e)]),
    [[['echo.example.internal'], false]],
  );
});

test('editing only WorkloadEntries is an endpoints-only change', async (t) => {
  const { registry, write, events } = await started(t, {
    'echo.yaml': ECHO_SE,
    'vm-1.yaml': vm('vm-1', '10.0.0.1'),
  });
  await write('vm-1.yaml', vm('vm-1', '10.0.0.9'));
  await write('vm-2.yaml', vm('vm-2', '10.0.0.2'));
  // Selected WorkloadEntries are ordered by name.
  await eventually(() => addresses(registry, 'echo.example.internal')?.join() === '10.0.0.9,10.0.0.2', {
    timeoutMs: 5000,
    what: 'new endpoints',
  });
  assert.ok(events.length >= 1);
  for (const e of events) {
    assert.deepEqual([...changedHosts(e)], ['echo.example.internal']);
    assert.equal(endpointsOnly(e), true);
  }
});

test('a broken edit is reported with path and line, and the last good version stays in force', async (t) => {
  const { registry, write } = await started(t, { 'echo.yaml': ECHO_SE, 'vm.yaml': vm('vm-1', '10.0.0.1') });
  await write('echo.yaml', ECHO_SE.replace('number: 50051', 'number: 99999'));
  await write('vm.yaml', 'apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\nmetadata: {name: vm-1\n');
  const files = await eventually(
    () => {
      const state = registry.debugState().files;
      return state.every((f) => f.status === 'error') && state;
    },
    { timeoutMs: 5000, what: 'both files in error' },
  );

  const echo = files.find((f) => f.path === 'echo.yaml');
  assert.deepEqual(echo?.errors, [
    { line: 10, column: 7, path: 'spec.ports[0].number', message: 'must be an integer in 1..65535' },
  ]);
  assert.deepEqual(echo?.resources, ['ServiceEntry/default/echo'], 'still the old version');
  assert.ok(echo?.loadedAt);
  const broken = files.find((f) => f.path === 'vm.yaml');
  assert.ok((broken?.errors[0]?.line ?? 0) >= 3);

  // Still serving the previous versions of both files.
  assert.equal(registry.snapshot().services.get('echo.example.internal')?.ports[0]?.number, 50051);
  assert.deepEqual(addresses(registry, 'echo.example.internal'), ['10.0.0.1']);
  const status = registry.status();
  assert.equal(status.stale, true);
  assert.match(
    status.lastError ?? '',
    /2 config file\(s\) with errors, e\.g\. echo\.yaml:10 spec\.ports\[0\]\.number/,
  );

  // Fixing the file brings it back to ok and applies the fix.
  await write('echo.yaml', ECHO_SE.replace('number: 50051', 'number: 50052'));
  await eventually(
    () => registry.snapshot().services.get('echo.example.internal')?.ports[0]?.number === 50052,
    { timeoutMs: 5000, what: 'fixed port' },
  );
  assert.equal(registry.debugState().files.find((f) => f.path === 'echo.yaml')?.status, 'ok');
});

test('while a file is broken an edit to another is applied, and the failure is neither cleared nor recorded again', async (t) => {
  const { registry, write } = await started(t, { 'echo.yaml': ECHO_SE, 'vm.yaml': vm('vm-1', '10.0.0.1') });
  const syncs: string[] = [];
  registry.onSyncEvent((e) => syncs.push(e.kind));
  await write('echo.yaml', ECHO_SE.replace('number: 50051', 'number: 99999'));
  await eventually(() => registry.status().stale, { timeoutMs: 5000, what: 'echo.yaml to be rejected' });
  await write('vm.yaml', vm('vm-1', '10.0.0.2'));
  await eventually(() => addresses(registry, 'echo.example.internal')?.join() === '10.0.0.2', {
    timeoutMs: 5000,
    what: 'the edit to vm.yaml',
  });
  await registry.settled();
  const status = registry.status();
  assert.equal(status.stale, true, 'echo.yaml is still broken');
  assert.match(status.lastError ?? '', /^1 config file\(s\) with errors, e\.g\. echo\.yaml:10 /);
  // The edit is a (partial) sync; a failed/synced pair per edit would count as errors in the metrics.
  assert.deepEqual(syncs, ['failed', 'synced']);
});

test('a new file that is broken from the start contributes nothing and blocks nothing', async (t) => {
  const { registry, write } = await started(t, { 'echo.yaml': ECHO_SE });
  await write('vm.yaml', vm('vm-1', '10.0.0.1') + '---\n' + vm('vm-2', 'not an address!'));
  const file = await eventually(
    () => registry.debugState().files.find((f) => f.path === 'vm.yaml') ?? false,
    { timeoutMs: 5000, what: 'vm.yaml state' },
  );
  assert.equal(file.status, 'error');
  assert.equal(file.loadedAt, null);
  assert.deepEqual(file.resources, []);
  assert.deepEqual(
    file.errors.map((e) => [e.line, e.path]),
    [[16, 'spec.address']],
  );
  assert.deepEqual(addresses(registry, 'echo.example.internal'), []);
  assert.ok(registry.snapshot().services.has('echo.example.internal'));
});

test('deleting a file removes what it defined; deleting a directory removes its files', async (t) => {
  const { registry, dir, events } = await started(t, {
    'svc/echo.yaml': ECHO_SE,
    'vms/vm-1.yaml': vm('vm-1', '10.0.0.1'),
  });
  await rm(join(dir, 'vms'), { recursive: true });
  await eventually(() => addresses(registry, 'echo.example.internal')?.length === 0, {
    timeoutMs: 5000,
    what: 'endpoint removed',
  });
  await unlink(join(dir, 'svc/echo.yaml'));
  await eventually(() => registry.snapshot().services.size === 0, {
    timeoutMs: 5000,
    what: 'service removed',
  });
  assert.deepEqual(registry.debugState().files, []);
  assert.equal(endpointsOnly(events.at(-1) ?? changeOf({})), false);
});

test('unknown kinds are warnings in the file status; hidden files are ignored', async (t) => {
  const { registry } = await started(t, {
    'mixed.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n---\n' + ECHO_SE,
    '.hidden.yaml': vm('hidden', '10.9.9.9'),
    '..data/vm.yaml': vm('shadow', '10.9.9.8'),
  });
  const [file, ...others] = registry.debugState().files;
  assert.deepEqual(others, []);
  assert.equal(file?.status, 'ok');
  assert.deepEqual(
    file?.warnings.map((w) => [w.line, w.message]),
    [[2, 'ConfigMap (v1) is not a kind Portolan serves; ignored']],
  );
  assert.deepEqual(file?.resources, ['ServiceEntry/default/echo']);
});

test('resource identity conflicts are listed in the debug state', async (t) => {
  const { registry } = await started(t, {
    'a.yaml': vm('vm-1', '10.0.0.1'),
    'b.yaml': vm('vm-1', '10.0.0.2'),
    'echo.yaml': ECHO_SE,
  });
  assert.deepEqual(addresses(registry, 'echo.example.internal'), ['10.0.0.1']);
  assert.deepEqual(registry.debugState().conflicts, [
    {
      type: 'duplicate-resource',
      subject: 'WorkloadEntry/default/vm-1',
      kept: { resource: 'WorkloadEntry/default/vm-1', file: 'a.yaml', line: 1 },
      ignored: { resource: 'WorkloadEntry/default/vm-1', file: 'b.yaml', line: 1 },
    },
  ]);
});

test('every log line about a config file carries its path and line: errors, their summary, conflicts', async (t) => {
  const { records, logger } = recordingLogger();
  const tmp = await makeTempDir();
  await tmp.write('a.yaml', vm('vm-1', '10.0.0.1'));
  await tmp.write('b.yaml', vm('vm-1', '10.0.0.2'));
  await tmp.write('echo.yaml', ECHO_SE.replace('number: 50051', 'number: 99999'));
  const registry = new ConfigDirRegistry({
    dir: tmp.dir,
    debounceMs: 30,
    logger,
  });
  t.after(async () => {
    await registry.stop();
    await tmp.cleanup();
  });
  await registry.start();
  const about = (file: string) =>
    eventually(
      () => records.filter((r) => r.file === file && (r.level as number) >= 40).length >= 1 && records,
      {
        timeoutMs: 5000,
        what: `a warning about ${file}`,
      },
    );
  await about('echo.yaml');
  await about('b.yaml');
  const warnings = records.filter((r) => (r.level as number) >= 40);
  assert.ok(warnings.length >= 3, JSON.stringify(warnings));
  for (const w of warnings) {
    assert.equal(typeof w.file, 'string', JSON.stringify(w));
    assert.equal(typeof w.line, 'number', JSON.stringify(w));
  }
  const summary = warnings.find((w) => w.msg === 'config file rejected');
  assert.deepEqual([summary?.file, summary?.line], ['echo.yaml', 10]);
  const conflict = warnings.find((w) => String(w.msg).includes('defined twice'));
  assert.deepEqual([conflict?.file, conflict?.line], ['b.yaml', 1]);
});

test('VirtualServices and DestinationRules are exposed, and onConfigChange fires when they change', async (t) => {
  const dr = (lb: string) =>
    `apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: echo}\nspec:\n  host: echo.example.internal\n  trafficPolicy: {loadBalancer: {simple: ${lb}}}\n`;
  const { registry, write } = await started(t, { 'dr.yaml': dr('ROUND_ROBIN') });
  assert.equal(
    registry.meshConfig().destinationRules[0]?.spec.trafficPolicy?.loadBalancer?.simple,
    'ROUND_ROBIN',
  );
  assert.deepEqual(registry.meshConfig().virtualServices, []);
  let fired = 0;
  registry.onConfigChange(() => fired++);
  await write('dr.yaml', dr('RANDOM'));
  await eventually(() => fired === 1, { timeoutMs: 5000, what: 'config change' });
  assert.equal(registry.meshConfig().destinationRules[0]?.spec.trafficPolicy?.loadBalancer?.simple, 'RANDOM');

  // A comment moves the resource down a line: the same config, so no change.
  await write('dr.yaml', '# comment\n' + dr('RANDOM'));
  await eventually(() => registry.meshConfig().destinationRules[0]?.line === 2, {
    timeoutMs: 5000,
    what: 'reloaded',
  });
  await registry.settled();
  assert.equal(fired, 1);
});

test('a Sidecar is mesh config: its edits fire onConfigChange; limitations show in the debug state', async (t) => {
  const sidecar = (hosts: string) =>
    `apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: default, namespace: shop}\nspec:\n  egress: [{hosts: [${hosts}]}]\n`;
  const { registry, write } = await started(t, { 'sidecar.yaml': sidecar('"./*"') });
  assert.deepEqual(registry.meshConfig().sidecars[0]?.spec.egress?.[0]?.hosts, ['./*']);
  let fired = 0;
  registry.onConfigChange(() => fired++);
  await write('sidecar.yaml', sidecar('"./*", "istio-system/*"'));
  await eventually(() => fired === 1, { timeoutMs: 5000, what: 'config change' });
  assert.deepEqual(registry.meshConfig().sidecars[0]?.spec.egress?.[0]?.hosts, ['./*', 'istio-system/*']);
  assert.deepEqual(
    trafficLimitations(registry.meshConfig()).map((l) => [l.resource, l.field, l.clients]),
    [['Sidecar/shop/default', 'spec.egress', ['grpc']]],
  );
});

test('one limitations list holds the route (VirtualService) and cluster (DestinationRule) limitations', async (t) => {
  const vs =
    'apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: echo}\nspec:\n  hosts: [echo.example.internal]\n' +
    '  http: [{route: [{destination: {host: echo.example.internal}}], mirror: {host: echo.example.internal}}]\n';
  const dr =
    'apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: echo}\nspec:\n  host: echo.example.internal\n' +
    '  trafficPolicy: {outlierDetection: {consecutive5xxErrors: 3}}\n';
  const { registry } = await started(t, { 'vs.yaml': vs, 'dr.yaml': dr });
  assert.deepEqual(
    trafficLimitations(registry.meshConfig()).map((l) => [l.resource, l.field, l.clients]),
    [
      ['VirtualService/default/echo', 'spec.http[0].mirror', ['grpc']],
      ['DestinationRule/default/echo', 'spec.trafficPolicy.outlierDetection', ['grpc']],
    ],
  );
});

test('settled() resolves once a burst of writes has been applied as one reload', async (t) => {
  const { registry, write, events } = await started(t, { 'echo.yaml': ECHO_SE });
  for (let i = 1; i <= 5; i++) await write(`vm-${i}.yaml`, vm(`vm-${i}`, `10.0.0.${i}`));
  await eventually(() => addresses(registry, 'echo.example.internal')?.length === 5, {
    timeoutMs: 5000,
    what: 'five endpoints',
  });
  await registry.settled();
  assert.ok(events.length <= 2, `${events.length} change events for one burst`);
});

test('a slow in-place write is picked up even if chokidar drops its second event', async (t) => {
  const { registry, dir } = await started(t, { 'echo.yaml': ECHO_SE });
  const handle = await open(join(dir, 'echo.yaml'), 'w'); // truncates: chokidar reports a change
  // Meanwhile the empty file is read; chokidar ignores further changes for 50 ms after the one it reported.
  await new Promise((r) => setTimeout(r, 40));
  await handle.writeFile(ECHO_SE.replace('number: 50051', 'number: 50052'));
  await handle.close();
  await eventually(
    () => registry.snapshot().services.get('echo.example.internal')?.ports[0]?.number === 50052,
    { timeoutMs: 5000, what: 'new port' },
  );
});

/**
 * Reads through the file system, except that a read finding vm.yaml empty (space at most) is
 * followed by the writer's next save from `saves`: as the read closes (a save's write landing just
 * after the read that found its truncate), or `laterMs` after it (a writer that lost its CPU between
 * its truncate and its write).
 */
function savesAfterEmptyReads(laterMs?: number): {
  readFs: ReadFs;
  saves: string[];
  emptyReads: () => number;
} {
  const saves: string[] = [];
  let emptyReads = 0;
  const readFs: ReadFs = {
    open: async (path) => {
      const handle = await open(path, 'r');
      const size = (await handle.stat()).size;
      return {
        stat: () => handle.stat(),
        read: (buffer, offset, length, position) => handle.read(buffer, offset, length, position),
        close: async () => {
          await handle.close();
          const save = saves[0];
          if (size <= 2 && save !== undefined && path.endsWith('vm.yaml')) {
            emptyReads += 1;
            saves.shift();
            // Synchronous, so the whole save is on disk when its timer's turn ends.
            if (laterMs !== undefined) setTimeout(() => writeFileSync(path, save), laterMs);
            else await writeFile(path, save);
          }
        },
      };
    },
  };
  return { readFs, saves, emptyReads: () => emptyReads };
}

/** A registry over echo.yaml and vm.yaml (10.0.0.1) reading through `readFs`, and its warnings. */
async function startedWithReads(t: TestContext, readFs: ReadFs, debounceMs?: number) {
  const { records, logger } = recordingLogger();
  const files = { 'echo.yaml': ECHO_SE, 'vm.yaml': vm('vm-1', '10.0.0.1') };
  const { registry, write } = await started(t, files, {
    logger,
    readFs,
    ...(debounceMs !== undefined && { debounceMs }),
  });
  const warnings = (): unknown[] => records.filter((r) => (r.level as number) >= 40).map((r) => r.msg);
  return { registry, write, warnings };
}

test("a file found empty by a read between a save's truncate and its write takes the write, with no error in between", async (t) => {
  const { readFs, saves, emptyReads } = savesAfterEmptyReads();
  const { registry, write, warnings } = await startedWithReads(t, readFs);
  // A save that writes back the same text, caught half-way: nothing changes, and nothing is left
  // pending that would make the next half-way save count as a second empty read.
  saves.push(vm('vm-1', '10.0.0.1'));
  await write('vm.yaml', '');
  await eventually(() => emptyReads() === 1, { timeoutMs: 5000, what: 'the first half-way read' });
  await registry.settled();
  saves.push(vm('vm-1', '10.0.0.9'));
  await write('vm.yaml', '');
  await eventually(() => addresses(registry, 'echo.example.internal')?.[0] === '10.0.0.9', {
    timeoutMs: 5000,
    what: 'the saved address',
  });
  await registry.settled();
  assert.equal(emptyReads(), 2, 'a read found the file truncated, each time');
  assert.deepEqual(warnings(), [], 'no warning for a save caught half-way');
  assert.equal(registry.debugState().files.find((f) => f.path === 'vm.yaml')?.status, 'ok');
});

test('a save whose write lands milliseconds after the truncate a read found is taken without waiting for a quiet period', async (t) => {
  const { readFs, saves, emptyReads } = savesAfterEmptyReads(3);
  // A quiet period far longer than the wait below: a read again a quiet period later would miss it.
  const { registry, write, warnings } = await startedWithReads(t, readFs, 2000);
  saves.push(vm('vm-1', '10.0.0.9'));
  await write('vm.yaml', '');
  await eventually(() => emptyReads() === 1, { timeoutMs: 10_000, what: 'the half-way read' });
  await eventually(() => addresses(registry, 'echo.example.internal')?.[0] === '10.0.0.9', {
    timeoutMs: 1000,
    what: 'the saved address, well within the quiet period',
  });
  await registry.settled();
  assert.deepEqual(warnings(), [], 'no warning for a save caught half-way');
  assert.equal(registry.debugState().files.find((f) => f.path === 'vm.yaml')?.status, 'ok');
});

test('a file rewritten in place again and again, caught half-way by the read and every read again, takes the next save with no error', async (t) => {
  const { readFs, saves, emptyReads } = savesAfterEmptyReads();
  const { registry, write, warnings } = await startedWithReads(t, readFs);
  // Each read that finds vm.yaml empty is followed by the writer's next save: truncated again (only
  // space: still empty) the first three times, so the read and the reads again over the next
  // milliseconds find it empty each time; the read a quiet period later finds the whole text.
  saves.push('\n\n', '\n', '\n\n', vm('vm-1', '10.0.0.9'));
  await write('vm.yaml', '\n');
  await eventually(() => addresses(registry, 'echo.example.internal')?.[0] === '10.0.0.9', {
    timeoutMs: 5000,
    what: 'the saved address',
  });
  await registry.settled();
  assert.equal(emptyReads(), 4, 'the read and its three reads again found the file empty');
  assert.deepEqual(warnings(), [], 'no warning: the file was written between the empty reads');
  assert.equal(registry.debugState().files.find((f) => f.path === 'vm.yaml')?.status, 'ok');
});

test('a file emptied by a save caught half-way keeps its last good version', async (t) => {
  const { registry, write } = await started(t, { 'echo.yaml': ECHO_SE, 'vm.yaml': vm('vm-1', '10.0.0.1') });
  await write('vm.yaml', '');
  const file = await eventually(
    () => registry.debugState().files.find((f) => f.path === 'vm.yaml' && f.status === 'error') ?? false,
    { timeoutMs: 5000, what: 'vm.yaml in error' },
  );
  assert.match(file.errors[0]?.message ?? '', /empty/);
  assert.deepEqual(addresses(registry, 'echo.example.internal'), ['10.0.0.1']);

  await write('vm.yaml', vm('vm-1', '10.0.0.9'));
  await eventually(() => addresses(registry, 'echo.example.internal')?.[0] === '10.0.0.9', {
    timeoutMs: 5000,
    what: 'new address',
  });
});
