// `portolan vm bundle` beside a running serve on the same data dir (issue #48): it dials --ca-addr
// as the agent will and refuses, writing nothing, a host the secure port's certificate does not
// name (naming serve's --secure-xds-sans), and serve's plaintext port; a named host gets a bundle.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startPortolanProcess, type PortolanProcess } from '../support/portolan-process.js';

const MAIN = fileURLToPath(new URL('../../cli/main.js', import.meta.url));
let dir: string;
let serve: PortolanProcess;
let securePort: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-vm-bundle-'));
  mkdirSync(join(dir, 'config'));
  serve = await startPortolanProcess([
    '--registries',
    'config',
    '--config-dir',
    join(dir, 'config'),
    '--data-dir',
    join(dir, 'data'),
    '--secure-xds-sans',
    'localhost',
  ]);
  const line = serve.logs.find((l) => l.msg === 'portolan serving');
  securePort = String(line?.secureXdsAddress).split(':').pop() ?? '';
});

after(async () => {
  await serve.stop();
  rmSync(dir, { recursive: true, force: true });
});

function bundle(caAddr: string, out: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const args = [
    'vm',
    'bundle',
    '--namespace',
    'shop',
    '--service-account',
    'cart',
    '--ca-addr',
    caAddr,
    '--data-dir',
    join(dir, 'data'),
    '--out',
    out,
  ];
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

test('a host the certificate does not name is refused, naming the serve flag; nothing is written', async () => {
  const out = join(dir, 'ip');
  const r = await bundle(`127.0.0.1:${securePort}`, out);
  assert.equal(r.code, 2);
  assert.match(
    r.stderr,
    /names DNS:localhost, not 127\.0\.0\.1: start portolan serve with --secure-xds-sans listing 127\.0\.0\.1/,
  );
  assert.match(r.stderr, /\(see `portolan vm bundle --help`\)\n$/);
  assert.equal(existsSync(out), false);
});

test("serve's plaintext port is refused as not TLS", async () => {
  const r = await bundle(serve.xdsAddress, join(dir, 'plain'));
  assert.equal(r.code, 2);
  assert.match(
    r.stderr,
    /does not speak TLS: is it serve's plaintext --xds-addr instead of its --secure-xds-addr\?/,
  );
});

test('a host it names gets agent.env and root-cert.pem, beside the running serve', async () => {
  const out = join(dir, 'ok');
  const r = await bundle(`localhost:${securePort}`, out);
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    readFileSync(join(out, 'agent.env'), 'utf8'),
    new RegExp(`^PORTOLAN_CA_ADDR=localhost:${securePort}$`, 'm'),
  );
  assert.match(readFileSync(join(out, 'root-cert.pem'), 'utf8'), /^-----BEGIN CERTIFICATE-----/);
});
