// Crash safety: `kill -9` the server while it persists a stream of registry changes, many times.
// Every restart must open a consistent database whose snapshot equals a state that was actually
// synced (never a mix of two), and serve exactly that state again.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { silentLogger } from '../../log/logger.js';
import { Store } from '../../store/store.js';
import { startPortolanProcess, type PortolanProcess } from '../support/portolan-process.js';

const HOST = 'crash.mock.internal';
const ITERATIONS = 12;
const dir = mkdtempSync(join(tmpdir(), 'portolan-crash-'));

after(() => rmSync(dir, { recursive: true, force: true }));

async function send(p: PortolanProcess, method: string, path: string, body: unknown): Promise<number> {
  const res = await fetch(`${p.httpBase}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  await res.text();
  return res.status;
}

/**
 * The generation label of each stored endpoint of HOST; undefined when no stored snapshot has HOST
 * (nothing stored yet, or only the empty registry of a run killed before its first PUT persisted).
 */
function storedGenerations(): string[] | undefined {
  const store = Store.open({ dataDir: dir, logger: silentLogger }); // opening also recovers the WAL
  try {
    const stored = store.snapshots.load('mock');
    if (!stored?.snapshot.services.has(HOST)) return undefined;
    return (stored.snapshot.endpoints.get(HOST) ?? []).map((e) => e.labels.gen ?? '?');
  } finally {
    store.close();
  }
}

test('kill -9 during a stream of changes never leaves a mixed or unreadable snapshot', async (t) => {
  const synced = new Set<string>();
  let gen = 0;
  let expected: string[] | undefined;
  let sawStored = 0;
  for (let i = 0; i < ITERATIONS; i++) {
    const p = await startPortolanProcess(['--registries', 'mock', '--data-dir', dir]);
    try {
      // The restart serves what the database held.
      const res = await fetch(`${p.httpBase}/mock/services`);
      const services = (await res.json()) as {
        hostname: string;
        endpoints: { labels: { gen?: string } }[];
      }[];
      const served = services.find((s) => s.hostname === HOST)?.endpoints.map((e) => e.labels.gen ?? '?');
      assert.deepEqual(served, expected, `iteration ${i}: served state equals the stored one`);

      assert.equal(
        await send(p, 'PUT', `/mock/services/${HOST}`, { ports: [{ name: 'grpc', number: 7070 }] }),
        200,
      );
      // The service with the endpoints it already had (none on the first run) is a synced state too.
      synced.add((expected ?? []).join(','));
      const killAt = Date.now() + 150 + ((i * 379) % 1100); // spread over the 500 ms write debounce
      while (Date.now() < killAt) {
        const g = String(++gen);
        const status = await send(p, 'PUT', `/mock/services/${HOST}/endpoints`, [
          { address: '127.0.0.1', labels: { gen: g } },
          { address: '127.0.0.2', labels: { gen: g } },
        ]);
        if (status === 200) synced.add(`${g},${g}`);
        await sleep(5);
      }
    } finally {
      process.kill(p.pid, 'SIGKILL');
      await p.stop(); // waits for the exit
    }
    expected = storedGenerations();
    if (expected) {
      sawStored += 1;
      // Each synced state is both endpoints at one generation (or the bare service at first):
      // a mix of two generations, or one endpoint of a pair, was never synced.
      assert.ok(
        synced.has(expected.join(',')),
        `iteration ${i}: stored [${expected.join(',')}] was a synced state`,
      );
    }
  }
  t.diagnostic(`${ITERATIONS} kills, ${gen} changes sent, a stored snapshot after ${sawStored} of them`);
  assert.ok(sawStored >= ITERATIONS / 2, 'most runs lived long enough to persist something');
});
