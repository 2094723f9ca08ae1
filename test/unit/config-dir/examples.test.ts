// examples/config is what the README points people at: it must load cleanly and mean what it says.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ConfigDirRegistry } from '../../../config-dir/registry.js';

/** The repository's examples/config: found above this (compiled) file, else from the working directory. */
function examplesDir(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, 'examples', 'config'))) return join(dir, 'examples', 'config');
  }
  return resolve('examples', 'config');
}

test('examples/config loads with no errors or warnings', async (t) => {
  const registry = new ConfigDirRegistry({ dir: examplesDir() });
  t.after(() => registry.stop());
  await registry.start();

  const state = registry.debugState();
  assert.deepEqual(
    state.files.map((f) => [f.path, f.status, f.errors, f.warnings]),
    [
      ['gateways/ingress.yaml', 'ok', [], []],
      ['services/catalog.yaml', 'ok', [], []],
      ['services/echo.yaml', 'ok', [], []],
      ['traffic/echo-destination-rule.yaml', 'ok', [], []],
      ['traffic/echo-split.yaml', 'ok', [], []],
      ['workloads/echo-1.yaml', 'ok', [], []],
      ['workloads/echo-2.yaml', 'ok', [], []],
    ],
  );
  assert.deepEqual(state.conflicts, []);
  assert.deepEqual(state.warnings, []);

  const { services, endpoints } = registry.snapshot();
  const echo = services.get('echo.example.internal');
  assert.deepEqual(echo?.ports, [{ name: 'grpc', number: 50051, protocol: 'GRPC' }]);
  assert.equal(echo?.resolution, 'STATIC');
  assert.deepEqual(
    endpoints
      .get('echo.example.internal')
      ?.map((e) => [e.address, e.ports.grpc, e.locality.zone, e.labels.version]),
    [
      ['127.0.0.1', 50051, 'us-east-1a', 'v1'],
      ['127.0.0.2', 50051, 'us-east-1b', 'v2'],
    ],
  );
  assert.deepEqual(services.get('catalog.example.internal')?.ports, [
    { name: 'http', number: 8080, protocol: 'HTTP' },
  ]);
  assert.deepEqual(
    endpoints.get('catalog.example.internal')?.map((e) => [e.address, e.ports.http]),
    [
      ['127.0.0.1', 18080],
      ['127.0.0.2', 18080],
    ],
  );
  assert.deepEqual(
    registry.meshConfig().destinationRules.map((dr) => [dr.spec.host, dr.spec.subsets?.map((s) => s.name)]),
    [['echo.example.internal', ['v1', 'v2']]],
  );
  assert.deepEqual(
    registry
      .meshConfig()
      .virtualServices.filter((vs) => vs.spec.hosts.includes('echo.example.internal'))
      .map((vs) => vs.spec.http?.[0]?.route?.map((r) => [r.destination.subset, r.weight])),
    [
      [
        ['v1', 80],
        ['v2', 20],
      ],
    ],
    'the split npm run demo shows: 80% to v1, 20% to v2',
  );
  assert.deepEqual(
    registry.meshConfig().gateways.map((g) => [g.name, g.spec.servers.map((s) => s.port.number)]),
    [['ingress', [8081]]],
  );
});
