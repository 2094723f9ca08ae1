// POST /debug/config_sync's answer (admin/config-sync.ts): the generation the sync resolves to; 0
// without the config registry; a sync that does not finish within the deadline is a 503 with an
// error (a hung network filesystem), one that fails a 500; a body past its small bound a 413.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { configSync } from '../../../admin/config-sync.js';

function request(headers: Record<string, string> = {}): IncomingMessage {
  return { headers, resume: () => undefined } as unknown as IncomingMessage;
}

test('config_sync answers the generation after the sync, or 0 without the config registry', async () => {
  assert.deepEqual(await configSync({ sync: () => Promise.resolve(12) }, request()), {
    status: 200,
    body: { generation: 12 },
  });
  assert.deepEqual(await configSync(undefined, request()), { status: 200, body: { generation: 0 } });
});

test('config_sync is bounded: 503 past the deadline, 500 when the sync fails, 413 for a large body', async () => {
  const hung = await configSync({ sync: () => new Promise<number>(() => undefined) }, request(), 20);
  assert.equal(hung.status, 503);
  assert.match((hung.body as { error: string }).error, /did not take in its files within 20 ms/);
  const failed = await configSync({ sync: () => Promise.reject(new Error('EACCES')) }, request());
  assert.equal(failed.status, 500);
  assert.match((failed.body as { error: string }).error, /EACCES/);
  const large = await configSync({ sync: () => Promise.resolve(1) }, request({ 'content-length': '100000' }));
  assert.equal(large.status, 413);
});
