// Upgrade: `portolan serve` started on a data directory (or, with --store, a PostgreSQL database
// restored from a pg_dump) written by an earlier release (checked in
// under test/fixtures/upgrade/, made by make-sqlite-fixture.ts there) migrates it and warm-starts
// with what that release left: the same CA (a certificate issued now chains to the recorded root),
// its join tokens (the recorded token still enrolls), and the registry's last good state (served
// before any source has synced). Each fixture is copied first, so the checked-in one never changes.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { requestCertificate } from '../../ca/ca-client.js';
import { createCsr } from '../../ca/certificates.js';
import { generateKeyPair } from '../../ca/keys.js';
import { x509 } from '../../ca/x509.js';
import { startPortolanProcess, type PortolanProcess } from '../support/portolan-process.js';
import { postgresBinDir, startPostgres, type PostgresServer } from '../support/postgres.js';

const FIXTURES = fileURLToPath(new URL('../../../test/fixtures/upgrade/', import.meta.url));
const ID = 'spiffe://cluster.local/ns/shop/sa/orders';
const dirs: string[] = [];
after(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

interface State {
  readonly hostname: string;
  readonly endpoints: readonly { readonly address: string }[];
}

/** What the release left, as a restarted serve must show it: last good state, CA and token. */
async function assertWarmStart(p: PortolanProcess, fixture: string): Promise<void> {
  const rootPem = readFileSync(join(fixture, 'root.pem'), 'utf8');
  const token = readFileSync(join(fixture, 'token.txt'), 'utf8').trim();
  const state = JSON.parse(readFileSync(join(fixture, 'state.json'), 'utf8')) as State;
  // The last good state: the mock registry restores what it held when the release stopped.
  const services = (await (await fetch(`${p.httpBase}/mock/services`)).json()) as {
    hostname: string;
    endpoints: { address: string }[];
  }[];
  const served = services.find((s) => s.hostname === state.hostname);
  assert.deepEqual(
    served?.endpoints.map((e) => e.address).sort(),
    state.endpoints.map((e) => e.address).sort(),
  );

  // The CA and the token: enrolling with the release's token gives a chain to the release's root.
  const serving = p.logs.find((l) => l.msg === 'portolan serving');
  const keys = await generateKeyPair('ec-p256');
  const res = await requestCertificate({
    address: String(serving?.secureXdsAddress),
    rootPem,
    token,
    csrPem: await createCsr(keys, ID),
  });
  const root = new x509.X509Certificate(res.certChain.at(-1) ?? '');
  assert.equal(root.serialNumber, new x509.X509Certificate(rootPem).serialNumber);
  const leaf = new x509.X509Certificate(res.certChain[0] ?? '');
  assert.ok(
    await leaf.verify({
      publicKey: new x509.X509Certificate(res.certChain[1] ?? '').publicKey,
      signatureOnly: true,
    }),
  );
}

const fixtures = readdirSync(FIXTURES);
const sqlite = fixtures.filter((name) => name.startsWith('sqlite-'));
const postgres = fixtures.filter((name) => name.startsWith('postgres-'));

test('there is a SQLite data directory and a PostgreSQL dump of an earlier release', () => {
  assert.ok(sqlite.length > 0 && postgres.length > 0, `fixtures in ${FIXTURES}`);
});

for (const release of sqlite) {
  test(`a data directory of ${release} warm-starts with its CA, tokens and last good state`, async () => {
    const fixture = join(FIXTURES, release);
    const dir = mkdtempSync(join(tmpdir(), 'portolan-upgrade-'));
    dirs.push(dir);
    cpSync(join(fixture, 'data'), dir, { recursive: true });
    const p = await startPortolanProcess(['--registries', 'mock', '--data-dir', dir]);
    try {
      await assertWarmStart(p, fixture);
    } finally {
      await p.stop();
    }
  });
}

let server: PostgresServer | undefined;
after(async () => server?.destroy());

for (const release of postgres) {
  test(`a PostgreSQL database of ${release} (pg_dump) serves a new replica its CA, tokens and last good state`, async () => {
    const fixture = join(FIXTURES, release);
    server ??= await startPostgres();
    const url = await server.createDatabase(release.replace(/\W/g, '_'));
    execFileSync(
      join(postgresBinDir(), 'psql'),
      ['-q', '-v', 'ON_ERROR_STOP=1', '-f', join(fixture, 'dump.sql'), url],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    // A replica that never ran: an empty data directory, everything from the shared store.
    const dir = mkdtempSync(join(tmpdir(), 'portolan-upgrade-pg-'));
    dirs.push(dir);
    const p = await startPortolanProcess(['--registries', 'mock', '--data-dir', dir, '--store', url]);
    try {
      await assertWarmStart(p, fixture);
    } finally {
      await p.stop();
    }
  });
}
