// Config generation ids (config-dir/generations.ts, issue #47): each publication of the config
// directory — one per file step — gets the next id, carried on its change event and on the history
// rows its step recorded; a restart with the same store numbers on past every id used; a rescan
// (sync) takes in an edit, a new file and a removal at once. Merged changes keep the highest
// generation (the push's).
import assert from 'node:assert/strict';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigDirRegistry } from '../../../config-dir/registry.js';
import { silentLogger } from '../../../log/logger.js';
import { changeOf, mergeChanges, type ChangeEvent } from '../../../model/change.js';
import { Store } from '../../../store/store.js';
import { makeTempDir } from './helpers.js';

const se = (host: string, address: string): string => `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ${host.split('.')[0]}}
spec:
  hosts: [${host}]
  resolution: STATIC
  ports: [{name: grpc, number: 7070, protocol: GRPC}]
  endpoints: [{address: ${address}}]
`;

test('each file step is the next generation, on its event and its history rows; a restart numbers on', async (t) => {
  const tmp = await makeTempDir();
  t.after(() => tmp.cleanup());
  const config = join(tmp.dir, 'config');
  const data = join(tmp.dir, 'data');
  await mkdir(data);
  await tmp.write('config/a.yaml', se('a.gen.internal', '10.0.0.1'));

  let store = Store.open({ dataDir: data, logger: silentLogger });
  // A long quiet period: only sync() takes edits in, one step each.
  let registry = new ConfigDirRegistry({ dir: config, history: store.history, debounceMs: 60_000 });
  const events: ChangeEvent[] = [];
  registry.onChange((e) => events.push(e));
  await registry.start();
  assert.equal(registry.generation(), 1, 'the initial load is the first publication');

  await writeFile(join(config, 'a.yaml'), se('a.gen.internal', '10.0.0.2'));
  assert.equal(await registry.sync(), 2);
  await writeFile(join(config, 'b.yaml'), se('b.gen.internal', '10.0.1.1'));
  assert.equal(await registry.sync(), 3, 'a new file, listed by the rescan');
  assert.equal(await registry.sync(), 3, 'nothing changed: no publication');
  assert.deepEqual(
    events.map((e) => e.trigger?.generation),
    [1, 2, 3],
  );
  // A removal is a step of its own too.
  await rm(join(config, 'b.yaml'));
  assert.equal(await registry.sync(), 4);
  await writeFile(join(config, 'b.yaml'), se('b.gen.internal', '10.0.1.1'));
  assert.equal(await registry.sync(), 5);
  assert.deepEqual(
    store.history
      .recent()
      .filter((r) => r.source === 'config')
      .map((r) => [r.subject, r.event, r.generation]),
    [
      ['b.yaml', 'accepted', 5],
      ['b.yaml', 'removed', 4],
      ['b.yaml', 'accepted', 3],
      ['a.yaml', 'accepted', 2],
      ['a.yaml', 'accepted', 1],
    ],
  );
  await registry.stop();
  store.close();

  store = Store.open({ dataDir: data, logger: silentLogger });
  t.after(() => store.close());
  registry = new ConfigDirRegistry({ dir: config, history: store.history, debounceMs: 60_000 });
  t.after(() => registry.stop());
  await registry.start();
  assert.equal(registry.generation(), 6, 'after a restart, ids go on from the last one used');
});

test('merged changes keep the highest generation, whichever side has it', () => {
  const at = (generation?: number): ChangeEvent =>
    changeOf({
      rules: ['x'],
      trigger: { registries: ['config'], files: [], ...(generation !== undefined && { generation }) },
    });
  assert.equal(mergeChanges(at(3), at(5)).trigger?.generation, 5);
  assert.equal(mergeChanges(at(5), at(3)).trigger?.generation, 5);
  assert.equal(mergeChanges(at(), at(4)).trigger?.generation, 4);
  assert.equal(mergeChanges(at(4), changeOf({ rules: ['y'] })).trigger?.generation, 4);
  assert.equal(mergeChanges(at(), at()).trigger?.generation, undefined);
});
