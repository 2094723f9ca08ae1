// The registry table: every name `--registries` accepts has a factory, and the two registries other
// parts of serve talk to (config directory, mock) are built by theirs and found among the built ones.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { mockRegistryFactory } from '../../../adapters/mock/factory.js';
import { MockRegistry } from '../../../adapters/mock/registry.js';
import { OptionError } from '../../../adapters/option-values.js';
import { builtBy } from '../../../adapters/registry-factory.js';
import { knownRegistries, REGISTRY_FACTORIES } from '../../../cli/registries.js';
import { SERVE_DEFAULTS } from '../../../cli/options.js';
import { configDirFactory } from '../../../config-dir/factory.js';
import { ConfigDirRegistry } from '../../../config-dir/registry.js';
import { silentLogger } from '../../../log/logger.js';
import type { ConfigHistory } from '../../../model/config-history.js';

const SERVICE_ENTRY = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: echo}
spec:
  hosts: [echo.example.internal]
  resolution: STATIC
  ports: [{name: grpc, number: 7070, protocol: GRPC}]
  endpoints: [{address: 10.0.0.1}]
`;

test('--registries knows one factory per name, in merge order: config, mock, then the external sources', () => {
  assert.deepEqual(knownRegistries(), ['config', 'mock', 'consul', 'zookeeper', 'kubernetes']);
  assert.equal(new Set(REGISTRY_FACTORIES).size, REGISTRY_FACTORIES.length);
});

test('the mock factory builds a MockRegistry named after it', async () => {
  const mock = await mockRegistryFactory.create({ flags: {}, dataDir: '', logger: silentLogger });
  assert.ok(mock instanceof MockRegistry);
  assert.equal(mock.name, mockRegistryFactory.name);
});

test('the config factory reads --config-dir from the flags and keeps accepted files in the history', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-config-factory-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const recorded: string[] = [];
  const configHistory: ConfigHistory = {
    lastAcceptedText: () => undefined,
    recordConfig: (path, outcome) => recorded.push(`${path} ${outcome}`),
  };
  writeFileSync(join(dir, 'echo.yaml'), SERVICE_ENTRY);
  const config = await configDirFactory.create({
    flags: { ...SERVE_DEFAULTS, configDir: dir },
    dataDir: '',
    logger: silentLogger,
    configHistory,
  });
  assert.ok(config instanceof ConfigDirRegistry);
  assert.equal(config.name, configDirFactory.name);
  await config.start();
  try {
    assert.equal(config.debugState().dir, dir);
    assert.deepEqual([...config.snapshot().services.keys()], ['echo.example.internal']);
    assert.deepEqual(recorded, ['echo.yaml accepted']);
  } finally {
    await config.stop();
  }
});

test('the config factory refuses a --config-dir that is not a path', () => {
  for (const configDir of [undefined, '', 7]) {
    assert.throws(
      () => configDirFactory.create({ flags: { configDir }, dataDir: '', logger: silentLogger }),
      (err: unknown) => err instanceof OptionError && /^--config-dir: /.test(err.message),
    );
  }
});

test('builtBy finds the registry a factory built among others, and nothing when it built none', async () => {
  const mock = await mockRegistryFactory.create({ flags: {}, dataDir: '', logger: silentLogger });
  const config = await configDirFactory.create({
    flags: { configDir: tmpdir() },
    dataDir: '',
    logger: silentLogger,
  });
  assert.equal(builtBy(mockRegistryFactory, [config, mock]), mock);
  assert.equal(builtBy(configDirFactory, [config, mock]), config);
  assert.equal(builtBy(configDirFactory, [mock]), undefined);
});
