// Crash safety of the CA's writes: `kill -9` a real `portolan` process while it spends join tokens
// (enrollments on the secure port) or rotates the root (`portolan ca rotate`), many times, at spread
// moments, and restart on the same data directory each time. The store must open consistent every
// time: the root unchanged by spends, the trust bundle whole (the old roots, plus the new one or not),
// no use of a token spent twice (uses left + enrollments never above the uses granted), and every
// certificate a client received in the issuance log.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { x509 } from '../../ca/x509.js';
import { requestCertificate } from '../../ca/ca-client.js';
import { createCsr } from '../../ca/certificates.js';
import { generateKeyPair } from '../../ca/keys.js';
import { NODE_FLAGS } from '../../cli/node-flags.js';
import { silentLogger } from '../../log/logger.js';
import Database from 'better-sqlite3';
import { DB_FILE, Store } from '../../store/store.js';
import { killOnExit } from '../support/kill-on-exit.js';
import { startPortolanProcess, type PortolanProcess } from '../support/portolan-process.js';

const MAIN = fileURLToPath(new URL('../../cli/main.js', import.meta.url));
const ID = 'spiffe://cluster.local/ns/shop/sa/orders';
const USES = 60;
const dirs: string[] = [];
after(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

const run = promisify(execFile);
async function portolan(...args: string[]): Promise<string> {
  return (await run(process.execPath, [...NODE_FLAGS, MAIN, ...args], { timeout: 30_000 })).stdout;
}

function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-ca-crash-'));
  dirs.push(dir);
  return dir;
}

/** The certificates of a PEM bundle, by serial; throws on anything unparseable. */
function bundleSerials(pem: string): string[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  assert.ok(blocks.length > 0, `a trust bundle with certificates: ${pem}`);
  return blocks.map((b) => new x509.X509Certificate(b).serialNumber);
}

/** Opens the store as a restart would (recovering the WAL), then checks SQLite's own consistency. */
function inspect<T>(dir: string, read: (store: Store) => T): T {
  const store = Store.open({ dataDir: dir, logger: silentLogger });
  let result: T;
  try {
    result = read(store);
  } finally {
    store.close();
  }
  const db = new Database(join(dir, DB_FILE), { readonly: true });
  try {
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
  } finally {
    db.close();
  }
  return result;
}

function secureAddress(p: PortolanProcess): string {
  const serving = p.logs.find((l) => l.msg === 'portolan serving');
  const address = serving?.secureXdsAddress;
  assert.equal(typeof address, 'string', `the secure port in ${JSON.stringify(serving)}`);
  return String(address);
}

test('kill -9 while enrollments spend a join token: no use spent twice, every issued certificate logged', async () => {
  const dir = freshDir();
  const rootPem = await portolan('ca', 'root', '--data-dir', dir);
  const roots = bundleSerials(rootPem);
  const token = (
    await portolan(
      'token',
      'create',
      '--namespace',
      'shop',
      '--service-account',
      'orders',
      '--uses',
      String(USES),
      '--data-dir',
      dir,
    )
  ).trim();
  const received: string[] = [];
  let killedWithCallsInFlight = 0;
  for (let i = 0; i < 6; i++) {
    const p = await startPortolanProcess(['--registries', 'mock', '--data-dir', dir]);
    const address = secureAddress(p);
    try {
      // Enrollments four at a time; the kill comes after the (i % 3 + 1)th answer, with the others
      // somewhere between spending the use and logging the certificate.
      const wanted = (i % 3) + 1;
      let answered = 0;
      let inFlight = 0;
      let killed = false;
      await new Promise<void>((resolve) => {
        const enroll = async (): Promise<void> => {
          inFlight += 1;
          try {
            const keys = await generateKeyPair('ec-p256');
            const res = await requestCertificate({
              address,
              rootPem,
              token,
              csrPem: await createCsr(keys, ID),
              timeoutMs: 5000,
            });
            received.push(new x509.X509Certificate(res.certChain[0] ?? '').serialNumber);
            answered += 1;
          } catch {
            // refused (no use left) or cut off by the kill: either is fine here
          } finally {
            inFlight -= 1;
          }
          if (killed) return;
          if (answered >= wanted) {
            killed = true;
            killedWithCallsInFlight += inFlight > 0 ? 1 : 0;
            process.kill(p.pid, 'SIGKILL');
            resolve();
          } else void enroll();
        };
        for (let k = 0; k < 4; k++) void enroll();
      });
    } finally {
      await p.stop(); // already killed: waits for the exit
    }
    inspect(dir, (store) => {
      const [row] = store.joinTokens.list();
      assert.ok(row, 'the token is still there');
      const enrolled = store.enrollments.countByToken(row.id);
      assert.ok(row.usesLeft >= 0, `uses left ${row.usesLeft}`);
      assert.ok(
        row.usesLeft + enrolled <= USES,
        `run ${i}: ${row.usesLeft} left + ${enrolled} enrolled ≤ ${USES}`,
      );
      for (const serial of received)
        assert.ok(store.ca.issuedBySerial(serial), `run ${i}: certificate ${serial} is in the issuance log`);
    });
  }
  assert.ok(killedWithCallsInFlight > 0, 'at least one kill landed with enrollments in flight');
  // The CA is the one it was: same root, and it still signs for the token's remaining uses.
  assert.deepEqual(bundleSerials(await portolan('ca', 'root', '--data-dir', dir)), roots);
  const p = await startPortolanProcess(['--registries', 'mock', '--data-dir', dir]);
  try {
    const keys = await generateKeyPair('ec-p256');
    const res = await requestCertificate({
      address: secureAddress(p),
      rootPem,
      token,
      csrPem: await createCsr(keys, ID),
    });
    assert.equal(res.certChain.length >= 2, true);
  } finally {
    await p.stop();
  }
});

test('kill -9 during `portolan ca rotate`: the trust bundle is the old one or the old one plus a root', async () => {
  const dir = freshDir();
  await portolan('ca', 'root', '--data-dir', dir);
  // One rotation left to finish says how long the command lives on this machine; the kills are
  // spread from its start to a little past that, so some land before the write and some after.
  const started = performance.now();
  await portolan('ca', 'rotate', '--data-dir', dir, '--overlap', '1h');
  const lifetimeMs = performance.now() - started;
  let bundle = bundleSerials(await portolan('ca', 'root', '--data-dir', dir));
  assert.equal(bundle.length, 2, 'a finished rotation adds a root');
  let grew = 0;
  let unchanged = 0;
  for (let i = 0; i < 10; i++) {
    const child = spawn(
      process.execPath,
      [...NODE_FLAGS, MAIN, 'ca', 'rotate', '--data-dir', dir, '--overlap', '1h'],
      {
        stdio: 'ignore',
      },
    );
    killOnExit(child);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    // Spread over the command's life: starting node, opening the store, making the key, writing.
    const killAfter = (lifetimeMs * 1.3 * (i + 1)) / 10;
    const timer = setTimeout(() => child.kill('SIGKILL'), killAfter);
    await exited;
    clearTimeout(timer);
    const now = bundleSerials(await portolan('ca', 'root', '--data-dir', dir));
    for (const serial of bundle) assert.ok(now.includes(serial), `run ${i}: old root ${serial} kept`);
    assert.ok(
      now.length === bundle.length || now.length === bundle.length + 1,
      `run ${i}: ${now.length} roots`,
    );
    if (now.length > bundle.length) grew += 1;
    else unchanged += 1;
    bundle = now;
    inspect(dir, () => undefined);
  }
  assert.ok(
    grew > 0 && unchanged > 0,
    `kills landed both before and after the write (${grew} grew, ${unchanged} not)`,
  );
});
