// The stand-in API server's fidelity, checked with the real kubectl (Debian: `kubernetes-client`;
// npm test installs it as root): discovery, Table lists across namespaces, JSON pagination with
// continue tokens, and a watch stream.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { eventually } from '../support/eventually.js';
import { KubeApiServerStandin } from '../support/kube-apiserver-standin.js';
import { kubeService, kubeSlice } from '../unit/kubernetes/kube-fixtures.js';

const run = promisify(execFile);

let dir: string;
let standin: KubeApiServerStandin;
let kubeconfig: string;

/** kubectl against the stand-in, with its caches in the temporary directory. */
function kubectlArgs(args: string[]): string[] {
  return ['--kubeconfig', kubeconfig, '--cache-dir', join(dir, 'cache'), '--request-timeout', '10s', ...args];
}

async function kubectl(args: string[]): Promise<string> {
  const { stdout } = await run('kubectl', kubectlArgs(args), {
    timeout: 30_000,
    env: { ...process.env, HOME: dir, KUBECONFIG: '' },
  });
  return stdout;
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-kubectl-'));
  standin = await KubeApiServerStandin.start();
  kubeconfig = standin.kubeconfig(dir);
  standin.apply(
    'services',
    kubeService('default', 'echo', [{ name: 'grpc', port: 7070 }], { clusterIP: '10.96.0.10' }),
  );
  standin.apply(
    'services',
    kubeService(
      'shop',
      'cart',
      [
        { name: 'http', port: 80 },
        { name: 'grpc-api', port: 9090 },
      ],
      { clusterIP: '10.96.0.20' },
    ),
  );
  standin.apply(
    'services',
    kubeService('shop', 'payments', [{ name: 'https', port: 443 }], {
      type: 'ExternalName',
      externalName: 'pay.example',
      clusterIP: '',
    }),
  );
  standin.apply(
    'endpointslices',
    kubeSlice(
      'default',
      'echo-x7k2p',
      'echo',
      [{ name: 'grpc', port: 50051 }],
      [{ address: '10.1.0.1' }, { address: '10.1.0.2' }],
    ),
  );
  standin.apply(
    'endpointslices',
    kubeSlice('shop', 'cart-abcde', 'cart', [{ name: 'http', port: 8080 }], [{ address: '10.2.0.1' }]),
  );
});

after(async () => {
  await standin.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('kubectl get services,endpointslices -A lists every object with its columns', async () => {
  const out = await kubectl(['get', 'services,endpointslices', '-A']);
  const lines = out.split('\n').map((l) => l.trim().split(/\s+/));
  const row = (name: string): string[] | undefined => lines.find((cells) => cells[1] === name);
  assert.deepEqual(row('service/echo'), [
    'default',
    'service/echo',
    'ClusterIP',
    '10.96.0.10',
    '<none>',
    '7070/TCP',
    row('service/echo')?.[6],
  ]);
  assert.deepEqual(row('service/cart')?.slice(0, 6), [
    'shop',
    'service/cart',
    'ClusterIP',
    '10.96.0.20',
    '<none>',
    '80/TCP,9090/TCP',
  ]);
  assert.deepEqual(row('service/payments')?.slice(0, 5), [
    'shop',
    'service/payments',
    'ExternalName',
    '<none>',
    'pay.example',
  ]);
  assert.deepEqual(row('endpointslice.discovery.k8s.io/echo-x7k2p')?.slice(0, 5), [
    'default',
    'endpointslice.discovery.k8s.io/echo-x7k2p',
    'IPv4',
    '50051',
    '10.1.0.1,10.1.0.2',
  ]);
  assert.deepEqual(row('endpointslice.discovery.k8s.io/cart-abcde')?.slice(0, 5), [
    'shop',
    'endpointslice.discovery.k8s.io/cart-abcde',
    'IPv4',
    '8080',
    '10.2.0.1',
  ]);
  // what kubectl asked for: discovery, then the lists as Tables
  const paths = standin.requests.map((r) => r.path);
  for (const p of [
    '/api',
    '/apis',
    '/api/v1',
    '/apis/discovery.k8s.io/v1',
    '/api/v1/services',
    '/apis/discovery.k8s.io/v1/endpointslices',
  ])
    assert.ok(paths.includes(p), `kubectl asked for ${p}`);
  assert.match(standin.requests.find((r) => r.path === '/api/v1/services')?.accept ?? '', /as=Table/);
});

test('kubectl -o json with --chunk-size pages through continue tokens and gets whole objects', async () => {
  const before = standin.requests.length;
  const out = await kubectl(['get', 'services', '-A', '-o', 'json', '--chunk-size', '1']);
  const list = JSON.parse(out) as {
    items: { metadata: { namespace: string; name: string; resourceVersion: string } }[];
  };
  assert.deepEqual(
    list.items.map((i) => `${i.metadata.namespace}/${i.metadata.name}`),
    ['default/echo', 'shop/cart', 'shop/payments'],
  );
  assert.ok(list.items.every((i) => Number(i.metadata.resourceVersion) > 1000));
  const pages = standin.requests.slice(before).filter((r) => r.path === '/api/v1/services');
  assert.equal(pages.length, 3);
  assert.deepEqual(
    pages.map((p) => [p.query.limit, p.query.continue !== undefined]),
    [
      ['1', false],
      ['1', true],
      ['1', true],
    ],
  );
});

test('kubectl get -w follows the watch stream', async () => {
  const child = spawn(
    'kubectl',
    kubectlArgs(['get', 'services', '-n', 'shop', '--watch', '--output-watch-events']),
    {
      env: { ...process.env, HOME: dir, KUBECONFIG: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    await eventually(() => assert.equal(standin.openWatches('services'), 1), { timeoutMs: 20_000 });
    standin.apply(
      'services',
      kubeService('shop', 'orders', [{ name: 'grpc', port: 7070 }], { clusterIP: '10.96.0.30' }),
    );
    standin.remove('services', 'shop', 'cart');
    await eventually(
      () => {
        assert.match(out, /ADDED\s+orders\s+ClusterIP\s+10\.96\.0\.30/);
        assert.match(out, /DELETED\s+cart\s+ClusterIP/);
      },
      { timeoutMs: 10_000 },
    );
    assert.match(out, /ADDED\s+payments\s+ExternalName/, 'the current objects first');
    assert.doesNotMatch(out, /echo/, 'namespace shop only');
  } finally {
    if (child.pid) process.kill(child.pid, 'SIGTERM');
    await exited;
  }
});
