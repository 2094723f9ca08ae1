// `portolan wait` against `portolan serve` and real clients (test/support/ops-mesh.ts: the real
// @grpc/grpc-js-xds client, an Envoy-like sidecar, raw clients that NACK or stay silent), with gRPC
// C-core calling through the same traffic split (issue 47, "Done means"):
//   - the split moved to the other backend, then `wait` exits 0, and both clients' calls land on the
//     new backend right after;
//   - a raw client that NACKs the next change makes `wait` exit 1 with its node id and message, and
//     /debug/configz marks the changed file with them; the mark goes when the client does;
//   - a client that never ACKs makes `wait --timeout 3s` exit 2 naming it;
//   - an unknown flag is exit 2 (what a bad duration is: test/unit/cli/wait.test.ts).
// One mesh for the file; the cases run in this order, each leaving the mesh as the next expects.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { ConfigzView, SynczView } from '../../model/admin-api.js';
import { CLUSTER } from '../../xds/proto/type-urls.js';
import { startCcoreEchoStream } from '../support/ccore-client.js';
import type { CallStream } from '../support/call-stream.js';
import { callEcho } from '../support/echo-backend.js';
import { eventually } from '../support/eventually.js';
import { ECHO_HOST, startOpsMesh, type OpsMesh } from '../support/ops-mesh.js';
import { PORTOLAN_MAIN } from '../support/portolan-cli.js';
import { grpcNode, RawAdsClient, resourceNames } from '../support/raw-ads-client.js';

const NEW_BACKEND = 'v2@127.0.0.2';
const REJECTION = 'test: rejected by policy';

let mesh: OpsMesh;
let ccore: CallStream;
let rulesFile: string;
let rules: string;

before(async () => {
  mesh = await startOpsMesh({ ca: false }); // no CA page here: four CLI runs fewer
  rulesFile = join(mesh.dir, 'traffic', 'echo-rules.yaml');
  rules = readFileSync(rulesFile, 'utf8');
  ccore = startCcoreEchoStream(
    `xds:///${ECHO_HOST}:${mesh.echoPort}`,
    mesh.portolan.xdsAddress,
    'ccore-client-1',
    100_000,
    {
      intervalMs: 50,
    },
  );
  // C-core is connected and calling through the split before any case changes it.
  await eventually(() => ccore.results.some((r) => r.ok), {
    timeoutMs: 20_000,
    what: 'a C-core call landing',
  });
});
after(async () => {
  await ccore?.stop();
  await mesh?.stop();
});

/** `portolan wait …` as a process, not blocking this one (its clients must answer meanwhile). */
function wait(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [PORTOLAN_MAIN, 'wait', ...args], { timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: unknown }).code ?? -1) : 0, stdout, stderr }),
    );
  });
}

const configz = (): Promise<ConfigzView> => mesh.getJson<ConfigzView>('/debug/configz');

/** Adds a subset to the DestinationRule of the echo service (a change every CDS wildcard client is sent). */
function addSubset(version: string): void {
  const text = readFileSync(rulesFile, 'utf8');
  const line = '    - { name: v2, labels: { version: v2 } }\n';
  assert.ok(text.includes(line));
  writeFileSync(
    rulesFile,
    text.replace(line, `${line}    - { name: ${version}, labels: { version: ${version} } }\n`),
  );
}

test('the split moved to the other backend, then wait: exit 0, and both clients call the new backend right after', async (t) => {
  const moved = rules.replace(
    /- route:\n(\s+- \{ destination: .*\n)+/,
    `- route:\n        - { destination: { host: ${ECHO_HOST}, subset: v2 }, weight: 100 }\n`,
  );
  assert.notEqual(moved, rules);
  const t0 = Date.now();
  writeFileSync(rulesFile, moved);
  const r = await wait(['--http-addr', mesh.httpAddr]);
  t.diagnostic(`wait ran ${Date.now() - t0} ms (process start included)`);
  t.diagnostic(`wait printed: ${r.stdout.trim()}`);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  // echo-client-1, ccore-client-1 and the sidecar were sent the new routes.
  assert.match(r.stdout, /^synced: [3-9] proxies ACKed the change in \S+ \(config generation \d+\)\n$/);
  const from = ccore.results.length;
  await eventually(
    async () => {
      for (let i = 0; i < 5; i++) assert.equal(await callEcho(mesh.client), NEW_BACKEND);
    },
    { timeoutMs: 5000, what: 'grpc-js calls landing on the new backend' },
  );
  await eventually(
    () => {
      const since = ccore.results.slice(from).filter((c) => c.ok);
      assert.ok(
        since.length >= 5 && since.slice(-5).every((c) => c.backend === NEW_BACKEND),
        JSON.stringify(since.slice(-5)),
      );
    },
    { timeoutMs: 5000, what: 'C-core calls landing on the new backend' },
  );
});

test('a client that NACKs the change: wait exits 1 naming it and its message; configz marks the file until it goes', async (t) => {
  const rejecter = new RawAdsClient(mesh.portolan.xdsAddress);
  try {
    rejecter.send({ node: grpcNode('rejecter'), type_url: CLUSTER });
    rejecter.ack(await rejecter.next());
    // Its ACK taken in before the change is written (the mark's files are those changed since).
    await eventually(async () => {
      const sync = await mesh.getJson<SynczView>('/debug/syncz?proxyID=rejecter');
      assert.equal(sync.proxies[0]?.state, 'SYNCED');
    });
    // A new subset: a new cluster for every client of the whole CDS list (the raw ones).
    addSubset('v3');
    const waiting = wait(['--http-addr', mesh.httpAddr, '--timeout', '20s']);
    const next = await rejecter.next(10_000);
    const cluster = resourceNames(next).find((n) => n.includes(`|v3|${ECHO_HOST}`)) ?? '';
    assert.notEqual(cluster, '', JSON.stringify(resourceNames(next)));
    const message = `cluster ${cluster}: ${REJECTION}`;
    rejecter.send({
      type_url: CLUSTER,
      version_info: '',
      response_nonce: next.nonce,
      error_detail: { code: 3, message },
    });
    const r = await waiting;
    t.diagnostic(`wait printed: ${r.stdout.trim()}`);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /^NACK: 1 of \d+ proxies rejected the change/);
    assert.ok(r.stdout.includes(`  rejecter rejected CDS: ${message}\n`), r.stdout);

    const marks = (await configz()).nacks.filter((m) => m.node === 'rejecter');
    assert.deepEqual(
      marks.map((m) => [m.file, m.type, m.name, m.message, m.client]),
      [['traffic/echo-rules.yaml', 'CDS', cluster, message, 'gRPC raw-ads-client']],
    );
    assert.equal(typeof marks[0]?.generation, 'number');
  } finally {
    rejecter.close();
  }
  await eventually(
    async () =>
      assert.deepEqual(
        (await configz()).nacks.filter((m) => m.node === 'rejecter'),
        [],
      ),
    {
      timeoutMs: 5000,
      what: "the rejecter's mark gone with its stream",
    },
  );
});

test('a client that never ACKs: wait --timeout 3s exits 2 naming it', async (t) => {
  addSubset('v4');
  const r = await wait(['--http-addr', mesh.httpAddr, '--timeout', '3s', '-o', 'json']);
  t.diagnostic(`wait -o json printed: ${r.stdout.trim()}`);
  assert.equal(r.code, 2, r.stdout + r.stderr);
  const report = JSON.parse(r.stdout) as { result: string; pending: { id: string; types: string[] }[] };
  assert.equal(report.result, 'timeout');
  assert.deepEqual(
    report.pending.find((p) => p.id === 'silent'),
    { id: 'silent', types: ['CDS'] },
  );
});

test('an unknown flag is a usage error: exit 2', async () => {
  const unknown = await wait(['--http-addr', mesh.httpAddr, '--bogus']);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown option '--bogus'/);
});
