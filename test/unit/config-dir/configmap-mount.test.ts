// The config directory as a Kubernetes ConfigMap volume, against a real directory and real chokidar
// events. kubelet (pkg/volume/util/atomic_writer.go) writes each version of the ConfigMap into a
// hidden timestamped directory, points the `..data` symlink at it, and shows each key as a symlink
// through `..data` (`echo.yaml -> ..data/echo.yaml`). An update writes a new timestamped directory,
// swaps `..data` atomically (a new symlink renamed over it), then deletes the old directory: every
// file changes at once, and the top-level symlinks themselves never change.
import assert from 'node:assert/strict';
import { mkdir, readlink, rename, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { ConfigDirRegistry } from '../../../config-dir/registry.js';
import { endpointsOnly, changedHosts, type ChangeEvent } from '../../../model/change.js';
import { eventually } from '../../support/eventually.js';
import { makeTempDir, workloadEntry } from './helpers.js';

const serviceEntry = (name: string, host: string): string => `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: ${name}, namespace: default }
spec:
  hosts: [${host}]
  resolution: STATIC
  ports: [{ name: grpc, number: 50051, protocol: GRPC }]
  workloadSelector: { labels: { app: ${name} } }
`;

const vm = (app: string, name: string, address: string): string =>
  workloadEntry(name, `  address: ${address}\n  labels: {app: ${app}}\n`);

const ECHO = 'echo.example.internal';
const OTHER = 'other.example.internal';
const echoYaml = (address: string): string =>
  `${serviceEntry('echo', ECHO)}---\n${vm('echo', 'echo-1', address)}`;
const OTHER_YAML = `${serviceEntry('other', OTHER)}---\n${vm('other', 'other-1', '10.9.0.1')}`;
const ROUTES_YAML = `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: { name: echo, namespace: default }
spec:
  host: ${ECHO}
  subsets: [{ name: v1, labels: { version: v1 } }]
`;

/** A directory laid out and updated the way kubelet does it for a ConfigMap volume. */
class ConfigMapVolume {
  private version = 0;
  private current: string | undefined;
  private keys = new Set<string>();

  constructor(readonly dir: string) {}

  /** Publishes `data` (key → content) as the ConfigMap's new version, atomically. */
  async publish(data: Readonly<Record<string, string>>): Promise<void> {
    const next = `..2024_01_01_00_00_00.${String(++this.version).padStart(9, '0')}`;
    await mkdir(join(this.dir, next));
    for (const [key, text] of Object.entries(data)) await writeFile(join(this.dir, next, key), text);
    await symlink(next, join(this.dir, '..data_tmp'));
    await rename(join(this.dir, '..data_tmp'), join(this.dir, '..data'));
    for (const key of Object.keys(data))
      if (!this.keys.has(key)) await symlink(join('..data', key), join(this.dir, key));
    for (const key of this.keys) if (!(key in data)) await unlink(join(this.dir, key));
    this.keys = new Set(Object.keys(data));
    if (this.current) await rm(join(this.dir, this.current), { recursive: true });
    this.current = next;
  }
}

async function mounted(t: TestContext, data: Record<string, string>) {
  const tmp = await makeTempDir();
  const volume = new ConfigMapVolume(tmp.dir);
  await volume.publish(data);
  const registry = new ConfigDirRegistry({ dir: tmp.dir, debounceMs: 30 });
  t.after(async () => {
    await registry.stop();
    await tmp.cleanup();
  });
  await registry.start();
  const events: ChangeEvent[] = [];
  registry.onChange((e) => events.push(e));
  let configChanges = 0;
  registry.onConfigChange(() => (configChanges += 1));
  return { volume, registry, events, configChanges: () => configChanges };
}

const addresses = (registry: ConfigDirRegistry, host: string): string[] | undefined =>
  registry
    .snapshot()
    .endpoints.get(host)
    ?.map((e) => e.address);

const loadedAt = (registry: ConfigDirRegistry, path: string): string | null | undefined =>
  registry.debugState().files.find((f) => f.path === path)?.loadedAt;

test('a ConfigMap volume loads through its symlinks, each key once', async (t) => {
  const { registry, volume } = await mounted(t, {
    'echo.yaml': echoYaml('10.0.0.1'),
    'other.yaml': OTHER_YAML,
  });
  assert.equal(await readlink(join(volume.dir, 'echo.yaml')), '..data/echo.yaml');
  assert.deepEqual(
    registry.debugState().files.map((f) => [f.path, f.status]),
    [
      ['echo.yaml', 'ok'],
      ['other.yaml', 'ok'],
    ],
    'the timestamped directory is not read as more files',
  );
  assert.deepEqual(addresses(registry, ECHO), ['10.0.0.1']);
  assert.deepEqual(registry.debugState().conflicts, []);
});

test('an atomic swap of ..data is picked up, and only the key that changed reloads', async (t) => {
  const { registry, volume, events, configChanges } = await mounted(t, {
    'echo.yaml': echoYaml('10.0.0.1'),
    'other.yaml': OTHER_YAML,
    'routes.yaml': ROUTES_YAML,
  });
  const otherLoadedAt = loadedAt(registry, 'other.yaml');
  const routesLoadedAt = loadedAt(registry, 'routes.yaml');
  await volume.publish({
    'echo.yaml': echoYaml('10.0.0.2'),
    'other.yaml': OTHER_YAML,
    'routes.yaml': ROUTES_YAML,
  });
  await eventually(() => addresses(registry, ECHO)?.[0] === '10.0.0.2', {
    timeoutMs: 5000,
    what: 'the new version of echo.yaml',
  });
  await registry.settled();
  assert.deepEqual(
    events.map((e) => [[...changedHosts(e)], endpointsOnly(e)]),
    [[[ECHO], true]],
    'one change: the endpoints of the one service whose file changed',
  );
  assert.equal(configChanges(), 0, 'the traffic config did not change, nor reload');
  assert.equal(loadedAt(registry, 'other.yaml'), otherLoadedAt);
  assert.equal(loadedAt(registry, 'routes.yaml'), routesLoadedAt);
  assert.deepEqual(addresses(registry, OTHER), ['10.9.0.1']);
});

test('a broken new version is reported and the old version stays in force', async (t) => {
  const { registry, volume } = await mounted(t, {
    'echo.yaml': echoYaml('10.0.0.1'),
    'other.yaml': OTHER_YAML,
  });
  await volume.publish({
    'echo.yaml': 'apiVersion: networking.istio.io/v1\nkind: [oops\n',
    'other.yaml': OTHER_YAML,
  });
  const file = await eventually(
    () => registry.debugState().files.find((f) => f.path === 'echo.yaml' && f.status === 'error') ?? false,
    { timeoutMs: 5000, what: 'echo.yaml reported broken' },
  );
  assert.ok(file.errors.length > 0 && file.errors.every((e) => e.line >= 1), JSON.stringify(file.errors));
  assert.deepEqual(addresses(registry, ECHO), ['10.0.0.1'], 'the last good version stays');

  // The next good version replaces it.
  await volume.publish({ 'echo.yaml': echoYaml('10.0.0.3'), 'other.yaml': OTHER_YAML });
  await eventually(() => addresses(registry, ECHO)?.[0] === '10.0.0.3', {
    timeoutMs: 5000,
    what: 'the fixed version',
  });
  assert.equal(registry.debugState().files.find((f) => f.path === 'echo.yaml')?.status, 'ok');
});

test('a key removed from the ConfigMap removes what it defined', async (t) => {
  const { registry, volume } = await mounted(t, {
    'echo.yaml': echoYaml('10.0.0.1'),
    'other.yaml': OTHER_YAML,
  });
  await volume.publish({ 'echo.yaml': echoYaml('10.0.0.1') });
  await eventually(() => !registry.snapshot().services.has(OTHER), {
    timeoutMs: 5000,
    what: 'other.yaml removed',
  });
  assert.deepEqual(addresses(registry, ECHO), ['10.0.0.1']);
  assert.deepEqual(
    registry.debugState().files.map((f) => f.path),
    ['echo.yaml'],
  );
});
