// The CA's hardening from the outside, with the real commands against `portolan serve` processes:
// `portolan token revoke` and `portolan cert revoke` reach certificates already issued — the open
// secure ADS stream is closed within seconds and the renewal refused; one serve per data directory,
// and two first starts make one CA root; --reset-store keeps the root of a damaged database; the
// default maximum certificate lifetime is 24 h.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, test, type TestContext } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { silentLogger } from '../../log/logger.js';
import { Store } from '../../store/store.js';
import { openAdsStream, type OpenAdsStream } from '../integration/ca-helpers.js';
import { eventually } from '../support/eventually.js';
import { startPortolanProcess, type PortolanProcess } from '../support/portolan-process.js';

const MAIN = fileURLToPath(new URL('../../cli/main.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'portolan-ca-hardening-'));
after(() => rmSync(root, { recursive: true, force: true }));

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function portolan(args: readonly string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

async function ok(args: readonly string[]): Promise<string> {
  const run = await portolan(args);
  assert.equal(run.code, 0, `portolan ${args.join(' ')}: ${run.stderr}`);
  return run.stdout;
}

async function serve(
  t: TestContext,
  data: string,
  args: readonly string[] = [],
): Promise<PortolanProcess & { secure: string }> {
  const p = await startPortolanProcess(['--registries', 'mock', '--data-dir', data, ...args]);
  t.after(() => p.stop());
  const serving = p.logs.find((l) => l.msg === 'portolan serving');
  return Object.assign(p, { secure: String(serving?.secureXdsAddress) });
}

/** Creates a token for shop/SA and runs `portolan cert --once` with it; returns the VM's directory and the token. */
async function onboard(data: string, secure: string, sa: string): Promise<{ vm: string; token: string }> {
  const vm = mkdtempSync(join(root, `vm-${sa}-`));
  writeFileSync(join(vm, 'first-root.pem'), await ok(['ca', 'root', '--data-dir', data]));
  const token = (
    await ok([
      'token',
      'create',
      '--namespace',
      'shop',
      '--service-account',
      sa,
      '--uses',
      '2',
      '--data-dir',
      data,
    ])
  ).trim();
  await ok(certArgs(secure, vm, ['--token', token]));
  return { vm, token };
}

function certArgs(secure: string, vm: string, extra: readonly string[] = []): string[] {
  return [
    'cert',
    '--ca-addr',
    secure,
    '--root-cert',
    join(vm, 'first-root.pem'),
    '--out',
    join(vm, 'out'),
    '--once',
    ...extra,
  ];
}

function secureStream(secure: string, vm: string, sa: string): OpenAdsStream {
  const out = join(vm, 'out');
  return openAdsStream(
    secure,
    {
      rootPem: readFileSync(join(out, 'root-cert.pem'), 'utf8'),
      certChainPem: readFileSync(join(out, 'cert-chain.pem'), 'utf8'),
      keyPem: readFileSync(join(out, 'key.pem'), 'utf8'),
    },
    { id: `${sa}-vm`, metadata: { NAMESPACE: 'shop', SERVICE_ACCOUNT: sa } },
  );
}

/** Runs the revoking command, then waits for the stream to be closed; returns the status and the time it took. */
async function closedBy(
  stream: OpenAdsStream,
  revoke: readonly string[],
): Promise<{ status: grpc.StatusObject; ms: number }> {
  await eventually(() => assert.ok(stream.responses.length > 0, 'the stream is serving'));
  const started = performance.now();
  await ok(revoke);
  const status = await eventually(
    () => {
      assert.ok(stream.isEnded(), 'the secure stream of the revoked certificate is closed');
      return stream.ended;
    },
    { timeoutMs: 15_000, intervalMs: 20 },
  );
  return { status, ms: performance.now() - started };
}

test('portolan token revoke reaches the certificates issued with the token: its stream closes in seconds, renewal is refused', async (t) => {
  const data = join(root, 'token-revoke');
  const p = await serve(t, data);
  const { vm, token } = await onboard(data, p.secure, 'orders');
  await ok(certArgs(p.secure, vm)); // a renewal with the certificate: the same enrollment
  const stream = secureStream(p.secure, vm, 'orders');
  t.after(() => stream.close());

  const { status, ms } = await closedBy(stream, ['token', 'revoke', token, '--data-dir', data]);
  t.diagnostic(`token revoke → secure stream closed: ${ms.toFixed(0)} ms`);
  assert.equal(status.code, grpc.status.UNAUTHENTICATED);
  const renewal = await portolan(certArgs(p.secure, vm));
  assert.notEqual(renewal.code, 0);
  assert.match(renewal.stderr, /revoked/);
});

test('portolan cert revoke --serial closes the stream of that certificate in seconds; --identity refuses the renewals of another enrollment', async (t) => {
  const data = join(root, 'cert-revoke');
  const p = await serve(t, data);
  const a = await onboard(data, p.secure, 'cart');
  const b = await onboard(data, p.secure, 'cart');
  const stream = secureStream(p.secure, a.vm, 'cart');
  t.after(() => stream.close());
  const serial = new X509Certificate(readFileSync(join(a.vm, 'out', 'cert-chain.pem'))).serialNumber;

  const { status, ms } = await closedBy(stream, ['cert', 'revoke', '--serial', serial, '--data-dir', data]);
  t.diagnostic(`cert revoke --serial → secure stream closed: ${ms.toFixed(0)} ms`);
  assert.equal(status.code, grpc.status.UNAUTHENTICATED);
  assert.match((await portolan(certArgs(p.secure, a.vm))).stderr, /revoked/);
  await ok(certArgs(p.secure, b.vm)); // the other VM of the identity renews

  const identity = 'spiffe://cluster.local/ns/shop/sa/cart';
  const revoked = await portolan([
    'cert',
    'revoke',
    '--identity',
    identity,
    '--reason',
    'decommissioned',
    '--data-dir',
    data,
  ]);
  assert.equal(revoked.code, 0, revoked.stderr);
  const renewal = await eventually(async () => {
    const run = await portolan(certArgs(p.secure, b.vm));
    assert.notEqual(run.code, 0);
    return run;
  });
  assert.match(renewal.stderr, /revoked.*decommissioned/);
});

test('one serve per data directory: of two started at once, one serves and the other exits naming its pid; one CA root', async (t) => {
  const data = join(root, 'two-serves');
  const results = await Promise.allSettled([
    startPortolanProcess(['--registries', 'mock', '--data-dir', data]),
    startPortolanProcess(['--registries', 'mock', '--data-dir', data]),
  ]);
  for (const r of results) if (r.status === 'fulfilled') t.after(() => r.value.stop());
  const running = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const refused = results.flatMap((r) => (r.status === 'rejected' ? [String(r.reason)] : []));
  assert.equal(running.length, 1, `exactly one serves; refused: ${refused.join(' | ')}`);
  assert.equal(refused.length, 1);
  assert.match(refused[0] ?? '', new RegExp(`in use by portolan serve pid ${running[0]?.pid}`));
  assert.match(refused[0] ?? '', /exited with 2/);
  // Read-only commands run beside it.
  assert.match(await ok(['ca', 'root', '--data-dir', data]), /BEGIN CERTIFICATE/);
  assert.equal((await portolan(['history', '--data-dir', data])).code, 0);
  assert.equal((await portolan(['token', 'list', '--data-dir', data])).code, 0);
});

test('two `portolan ca root` at once on an empty data directory print the same root', async () => {
  for (let round = 0; round < 3; round++) {
    const data = join(root, `two-roots-${round}`);
    mkdirSync(data);
    const [a, b] = await Promise.all([
      ok(['ca', 'root', '--data-dir', data]),
      ok(['ca', 'root', '--data-dir', data]),
    ]);
    assert.equal(a, b, `round ${round}: one root`);
    assert.equal(await ok(['ca', 'root', '--data-dir', data]), a);
  }
});

test('--reset-store on a damaged database keeps the CA root: no silent new root', async (t) => {
  const data = join(root, 'reset');
  const first = await serve(t, data);
  const rootBefore = await ok(['ca', 'root', '--data-dir', data]);
  await first.stop();
  // Fill pages after the CA's with history, then damage the last of them.
  const store = Store.open({ dataDir: data, logger: silentLogger });
  for (let i = 0; i < 2000; i++)
    store.history.recordRegistry('mock', 'synced', `event ${i} ${'x'.repeat(200)}`);
  store.close();
  const path = join(data, 'portolan.db');
  const fd = openSync(path, 'r+');
  writeSync(fd, Buffer.alloc(8192, 0xa5), 0, 8192, statSync(path).size - 3 * 4096);
  closeSync(fd);
  await assert.rejects(startPortolanProcess(['--registries', 'mock', '--data-dir', data]), /portolan\.db/);

  const again = await serve(t, data, ['--reset-store']);
  await again.stop();
  assert.equal(await ok(['ca', 'root', '--data-dir', data]), rootBefore);
});

test('the default maximum certificate lifetime is 24 h', async (t) => {
  const data = join(root, 'max-ttl');
  const p = await serve(t, data);
  const { vm } = await onboard(data, p.secure, 'ttl');
  const run = await portolan(certArgs(p.secure, vm, ['--ttl', '48h']));
  assert.notEqual(run.code, 0);
  assert.match(run.stderr, /above the maximum of 86400s/);
});
