// A batch's reads overlap (read-step.ts, READ_AHEAD): a first read of a file is four round trips
// through the thread pool, and the initial load of a large directory waited on them one at a time.
import assert from 'node:assert/strict';
import { open } from 'node:fs/promises';
import { test } from 'node:test';
import { ConfigDirRegistry } from '../../../config-dir/registry.js';
import type { ReadFs } from '../../../config-dir/read-file.js';
import { READ_AHEAD } from '../../../config-dir/read-step.js';
import { makeTempDir } from './helpers.js';

const FILES = 40;

const se = (i: number): string => `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: s${i} }
spec:
  hosts: [s${i}.ahead.internal]
  ports: [{ number: 80, name: http, protocol: HTTP }]
  resolution: STATIC
  endpoints: [{ address: 10.1.0.${i + 1} }]
`;

test('the initial load reads files a few at a time, never more than READ_AHEAD, and takes them all', async (t) => {
  const tmp = await makeTempDir();
  for (let i = 0; i < FILES; i++) await tmp.write(`s${i}.yaml`, se(i));
  let inFlight = 0;
  let most = 0;
  const readFs: ReadFs = {
    open: async (path) => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      const handle = await open(path, 'r');
      return {
        stat: () => handle.stat(),
        read: (buffer, offset, length, position) => handle.read(buffer, offset, length, position),
        close: async () => {
          await handle.close();
          inFlight -= 1;
        },
      };
    },
  };
  const registry = new ConfigDirRegistry({ dir: tmp.dir, readFs });
  t.after(async () => {
    await registry.stop();
    await tmp.cleanup();
  });
  await registry.start();
  assert.equal(registry.snapshot().services.size, FILES);
  assert.ok(most > 1, `reads overlapped (${most} at most)`);
  assert.ok(most <= READ_AHEAD, `at most ${READ_AHEAD} at once (${most})`);
});
