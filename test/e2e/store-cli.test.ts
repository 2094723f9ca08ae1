// The store from the outside: a corrupted database stops `portolan serve` with its path and SQLite's
// words unless --reset-store; /debug/historyz and `portolan history` show what happened.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, test } from 'node:test';
import { eventually } from '../support/eventually.js';
import { startPortolanProcess } from '../support/portolan-process.js';

const MAIN = fileURLToPath(new URL('../../cli/main.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'portolan-store-cli-'));
after(() => rmSync(root, { recursive: true, force: true }));

function portolan(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

test('a corrupted database stops the start, naming the file; --reset-store --reset-ca moves it aside', async () => {
  const data = join(root, 'corrupt');
  mkdirSync(data);
  writeFileSync(join(data, 'portolan.db'), 'garbage, not SQLite '.repeat(300));
  await assert.rejects(
    startPortolanProcess(['--registries', 'mock', '--data-dir', data]),
    (err: Error) => err.message.includes(join(data, 'portolan.db')) && /not a database/.test(err.message),
  );
  // Garbage holds no readable CA state: --reset-store alone would mean a new CA root, so it refuses.
  await assert.rejects(
    startPortolanProcess(['--registries', 'mock', '--data-dir', data, '--reset-store']),
    (err: Error) => /--reset-ca/.test(err.message),
  );
  assert.equal(readdirSync(data).filter((f) => f.startsWith('portolan.db.corrupt-')).length, 0);
  const p = await startPortolanProcess([
    '--registries',
    'mock',
    '--data-dir',
    data,
    '--reset-store',
    '--reset-ca',
  ]);
  await p.stop();
  assert.equal(readdirSync(data).filter((f) => f.startsWith('portolan.db.corrupt-')).length, 1);
});

test('/debug/historyz and `portolan history` show config changes and proxy connections', async () => {
  const data = join(root, 'history');
  const config = join(root, 'config');
  mkdirSync(config);
  writeFileSync(
    join(config, 'svc.yaml'),
    'apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: { name: svc }\nspec:\n  hosts: [svc.hist.internal]\n  ports: [{ number: 80, name: http, protocol: HTTP }]\n  resolution: DNS\n',
  );
  const p = await startPortolanProcess(['--config-dir', config, '--data-dir', data]);
  try {
    writeFileSync(join(config, 'broken.yaml'), 'kind: [');
    const body = await eventually(async () => {
      const res = await fetch(`${p.httpBase}/debug/historyz`);
      const json = (await res.json()) as { changes: { subject: string; event: string }[] };
      assert.ok(json.changes.some((c) => c.subject === 'broken.yaml' && c.event === 'rejected'));
      return json;
    });
    assert.ok(body.changes.some((c) => c.subject === 'svc.yaml' && c.event === 'accepted'));
    assert.ok(body.changes.some((c) => c.subject === 'config' && c.event === 'synced'));
  } finally {
    await p.stop();
  }
  const table = await portolan(['history', '--data-dir', data]);
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /broken\.yaml\s+rejected/);
  const json = await portolan(['history', '--data-dir', data, '--json', '--limit', '2']);
  assert.equal((JSON.parse(json.stdout) as { changes: unknown[] }).changes.length, 2);
  const missing = await portolan(['history', '--data-dir', join(root, 'nowhere')]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /nowhere.*portolan\.db/);
});
