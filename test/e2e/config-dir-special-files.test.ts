// `portolan serve` with a config directory holding a file that is not a regular file (a FIFO named
// like a config file), and its shutdown deadline. A FIFO used to block the first load forever: the
// ports were never bound, every later reload queued behind it, and SIGTERM waited on it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { eventually } from '../support/eventually.js';
import { startPortolanProcess, type PortolanProcess } from '../support/portolan-process.js';
import { CLUSTER } from '../../xds/proto/type-urls.js';
import { grpcNode, RawAdsClient } from '../support/raw-ads-client.js';

const root = mkdtempSync(join(tmpdir(), 'portolan-special-files-'));
after(() => rmSync(root, { recursive: true, force: true }));

const serviceEntry = (host: string, address: string): string => `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: svc, namespace: default }
spec:
  hosts: [${host}]
  resolution: STATIC
  ports: [{ name: grpc, number: 50051, protocol: GRPC }]
  endpoints: [{ address: ${address} }]
`;

interface Configz {
  files: { path: string; status: string; errors: { line: number; message: string }[] }[];
}

async function configz(p: PortolanProcess): Promise<Configz> {
  const res = await fetch(`${p.httpBase}/debug/configz`, { signal: AbortSignal.timeout(5000) });
  return (await res.json()) as Configz;
}

async function endpointsOf(p: PortolanProcess, host: string): Promise<string[]> {
  const res = await fetch(`${p.httpBase}/debug/registryz`, { signal: AbortSignal.timeout(5000) });
  const z = (await res.json()) as {
    registries: { services: { hostname: string; endpoints: { address: string }[] }[] }[];
  };
  const service = z.registries.flatMap((r) => r.services).find((s) => s.hostname === host);
  return service?.endpoints.map((e) => e.address) ?? [];
}

test('a FIFO named aaa.yaml is an error for that file alone: the server binds, reloads go on, SIGTERM exits', async () => {
  const dir = join(root, 'fifo');
  const config = join(dir, 'config');
  execFileSync('mkdir', ['-p', config]);
  execFileSync('mkfifo', [join(config, 'aaa.yaml')]);
  writeFileSync(join(config, 'bbb.yaml'), serviceEntry('b.example.internal', '10.0.0.1'));

  const p = await startPortolanProcess([
    '--registries',
    'config',
    '--config-dir',
    config,
    '--data-dir',
    join(dir, 'data'),
  ]);
  let stopped = false;
  try {
    // A file of the initial load that could not be read keeps /ready at 503 (what it would serve
    // is unknown), naming it; everything else is served meanwhile.
    const ready = await fetch(`${p.httpBase}/ready`);
    assert.equal(ready.status, 503);
    assert.match(await ready.text(), /aaa\.yaml/);
    const files = (await configz(p)).files;
    const fifo = files.find((f) => f.path === 'aaa.yaml');
    assert.equal(fifo?.status, 'error');
    assert.match(fifo?.errors[0]?.message ?? '', /not a regular file \(a FIFO\)/);
    assert.equal(files.find((f) => f.path === 'bbb.yaml')?.status, 'ok');
    assert.deepEqual(await endpointsOf(p, 'b.example.internal'), ['10.0.0.1']);

    // A later edit of another file still reloads: nothing queues behind the FIFO.
    writeFileSync(join(config, 'bbb.yaml'), serviceEntry('b.example.internal', '10.0.0.2'));
    await eventually(async () => assert.deepEqual(await endpointsOf(p, 'b.example.internal'), ['10.0.0.2']), {
      what: 'the edit of bbb.yaml to load',
    });

    const exit = await p.stop();
    stopped = true;
    assert.deepEqual(exit, { code: 0, signal: null, killed: false }, 'SIGTERM ends the process cleanly');
  } finally {
    if (!stopped) await p.stop();
  }
});

test('shutdown has a deadline: past it the process exits non-zero, naming what it waited for', async () => {
  const dir = join(root, 'deadline');
  const config = join(dir, 'config');
  execFileSync('mkdir', ['-p', config]);
  writeFileSync(join(config, 'svc.yaml'), serviceEntry('d.example.internal', '10.0.0.3'));
  const p = await startPortolanProcess([
    '--registries',
    'config',
    '--config-dir',
    config,
    '--data-dir',
    join(dir, 'data'),
    '--secure-xds-addr',
    'off',
    '--shutdown-timeout',
    '300ms',
  ]);
  // An open ADS stream: the gRPC server waits for it (up to its own 2 s grace) before closing.
  const client = new RawAdsClient(p.xdsAddress);
  try {
    client.send({ node: grpcNode('deadline-client'), type_url: CLUSTER });
    await client.next();
    const exit = await p.stop();
    assert.equal(exit.code, 1, 'a shutdown past its deadline exits non-zero');
    assert.equal(exit.killed, false, 'it exits by itself, before the SIGKILL');
    const line = p.logs.find((l) => String(l.msg).startsWith('shutdown did not finish within 300 ms'));
    assert.ok(line, `the deadline is logged: ${JSON.stringify(p.logs.slice(-5))}`);
    assert.deepEqual(line.waitingFor, ['xDS gRPC server: 1 stream(s) open']);
  } finally {
    client.close();
    await p.stop();
  }
});
