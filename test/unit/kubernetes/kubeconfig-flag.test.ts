// `--kubeconfig` and `--domain`: parsing, loading, and the clear errors for bad values.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Command } from 'commander';
import { parseKubeconfigFlag } from '../../../adapters/kubernetes/flags.js';
import { IN_CLUSTER_ID, loadClusters } from '../../../adapters/kubernetes/kubeconfig.js';
import { kubernetesFactory } from '../../../adapters/kubernetes/factory.js';
import { OptionError } from '../../../cli/options.js';
import { silentLogger } from '../../../log/logger.js';

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-kubeconfig-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

function kubeconfig(
  name: string,
  contexts: string[],
  { current = contexts[0], server = 'https://127.0.0.1:6443' } = {},
): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      ...contexts.flatMap((c) => [`- name: ${c}`, '  cluster:', `    server: ${server}`]),
      'users:',
      '- name: u',
      '  user: { token: t }',
      'contexts:',
      ...contexts.flatMap((c) => [`- name: ${c}`, '  context:', `    cluster: ${c}`, '    user: u']),
      ...(current ? [`current-context: ${current}`] : []),
      '',
    ].join('\n'),
  );
  return path;
}

test('PATH[#CONTEXT][=CLUSTER_ID], comma-separated and repeatable', () => {
  assert.deepEqual(parseKubeconfigFlag(['/a.yaml']), [{ path: '/a.yaml' }]);
  assert.deepEqual(parseKubeconfigFlag(['/a.yaml=east, /b.yaml#prod=west', '/c.yaml#dev']), [
    { path: '/a.yaml', clusterId: 'east' },
    { path: '/b.yaml', context: 'prod', clusterId: 'west' },
    { path: '/c.yaml', context: 'dev' },
  ]);
  assert.deepEqual(parseKubeconfigFlag([]), []);
});

test('bad --kubeconfig values are refused with the reason', () => {
  const bad: [string, RegExp][] = [
    ['/a.yaml,,/b.yaml', /empty entry/],
    ['=east', /no file path/],
    ['/a.yaml#=east', /empty context/],
    ['/a.yaml=', /cluster id ""/],
    ['/a.yaml=has space', /cluster id "has space"/],
    ['/a.yaml=-east', /cluster id "-east"/],
  ];
  for (const [value, message] of bad)
    assert.throws(
      () => parseKubeconfigFlag([value]),
      (err: unknown) => err instanceof OptionError && message.test(err.message),
      value,
    );
});

test('the cluster id defaults to the context name; a context can be picked from a shared file', () => {
  const shared = kubeconfig('shared.yaml', ['prod-eu', 'prod-us']);
  const clusters = loadClusters(parseKubeconfigFlag([`${shared},${shared}#prod-us=us`]));
  assert.deepEqual(
    clusters.map((c) => [c.id, c.config.getCurrentContext()]),
    [
      ['prod-eu', 'prod-eu'],
      ['us', 'prod-us'],
    ],
  );
});

test('kubeconfig problems are OptionErrors naming the file', () => {
  const one = kubeconfig('one.yaml', ['ctx']);
  const none = kubeconfig('none.yaml', ['ctx'], { current: '' });
  const plain = kubeconfig('plain.yaml', ['ctx'], { server: 'http://127.0.0.1:8080' });
  const cases: [string, RegExp][] = [
    [join(dir, 'missing.yaml'), /missing\.yaml: .*ENOENT/],
    [`${one}#other`, /no context "other"/],
    [none, /no current-context/],
    [plain, /plain HTTP; set insecure-skip-tls-verify/],
    [`${one},${one}`, /cluster id "ctx" is used twice/],
  ];
  for (const [value, message] of cases)
    assert.throws(
      () => loadClusters(parseKubeconfigFlag([value])),
      (err: unknown) => err instanceof OptionError && message.test(err.message),
      value,
    );
});

test('without --kubeconfig: in-cluster config with the cluster id Kubernetes, or a clear error outside a pod', () => {
  const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
  try {
    delete process.env.KUBERNETES_SERVICE_HOST;
    delete process.env.KUBERNETES_SERVICE_PORT;
    assert.throws(
      () => loadClusters([]),
      (err: unknown) => err instanceof OptionError && /KUBERNETES_SERVICE_HOST/.test(err.message),
    );
    process.env.KUBERNETES_SERVICE_HOST = '10.96.0.1';
    process.env.KUBERNETES_SERVICE_PORT = '443';
    const [cluster] = loadClusters([]);
    assert.equal(cluster?.id, 'Kubernetes');
    assert.equal(IN_CLUSTER_ID, 'Kubernetes');
    assert.equal(cluster?.config.getCurrentCluster()?.server, 'https://10.96.0.1:443');
  } finally {
    for (const [name, value] of [
      ['KUBERNETES_SERVICE_HOST', saved.host],
      ['KUBERNETES_SERVICE_PORT', saved.port],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
});

test('the factory adds --kubeconfig (repeatable) and --domain (default cluster.local) and builds the registry', async () => {
  const command = new Command().exitOverride();
  kubernetesFactory.addFlags(command);
  const a = kubeconfig('fa.yaml', ['a']);
  const b = kubeconfig('fb.yaml', ['b']);
  command.parse(['--kubeconfig', `${a}=east`, '--kubeconfig', b], { from: 'user' });
  const flags = command.opts();
  assert.deepEqual(flags, { kubeconfig: [`${a}=east`, b], domain: 'cluster.local' });
  const registry = await kubernetesFactory.create({ flags, dataDir: dir, logger: silentLogger });
  assert.equal(registry.name, 'kubernetes');
  assert.equal(registry.hasSynced(), false, 'not started');

  await assert.rejects(
    async () =>
      kubernetesFactory.create({
        flags: { ...flags, domain: 'Bad_Domain' },
        dataDir: dir,
        logger: silentLogger,
      }),
    (err: unknown) => err instanceof OptionError && /--domain/.test(err.message),
  );
});
