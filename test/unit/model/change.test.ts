// Change triggers merge as changes do: the union of registries and files, bounded.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  configScope,
  MAX_TRIGGER_NAMES,
  mergeChanges,
  mergeTriggers,
  sameData,
  type ChangeTrigger,
} from '../../../model/change.js';

test('merged changes keep the union of their triggers', () => {
  const merged = mergeChanges(
    {
      hostnames: new Set(['a']),
      endpointsOnly: true,
      trigger: { registries: ['config'], files: ['a.yaml'] },
    },
    {
      hostnames: new Set(['b']),
      endpointsOnly: true,
      trigger: { registries: ['mock', 'config'], files: [] },
    },
  );
  assert.deepEqual(merged.trigger, { registries: ['config', 'mock'], files: ['a.yaml'] });
  const untriggered = mergeChanges(
    { hostnames: new Set(), endpointsOnly: false },
    { hostnames: new Set(), endpointsOnly: false },
  );
  assert.equal(untriggered.trigger, undefined);
});

test('a config change merged with changes of some hosts stays a config change, and keeps those hosts', () => {
  const hosts = { hostnames: new Set(['a', 'b']), endpointsOnly: true };
  // As the ADS server queues a config change, and as older callers did (no hostname at all).
  for (const config of [
    { hostnames: new Set<string>(), endpointsOnly: false, config: 'all' as const },
    { hostnames: new Set<string>(), endpointsOnly: false },
  ]) {
    for (const merged of [mergeChanges(hosts, config), mergeChanges(config, hosts)]) {
      assert.equal(configScope(merged), 'all');
      assert.deepEqual([...merged.hostnames].sort(), ['a', 'b']);
      assert.equal(merged.endpointsOnly, false);
    }
  }
  const scoped = mergeChanges(hosts, { hostnames: new Set(['r']), endpointsOnly: false, config: 'hosts' });
  assert.equal(configScope(scoped), 'hosts');
  assert.equal(configScope(mergeChanges(scoped, { hostnames: new Set(), endpointsOnly: false })), 'all');
  const both = mergeChanges(hosts, { hostnames: new Set(['c']), endpointsOnly: false });
  assert.deepEqual([...both.hostnames].sort(), ['a', 'b', 'c']);
  assert.equal(both.endpointsOnly, false);
  assert.equal(configScope(both), undefined);
});

test('a storm of edits does not grow a trigger past its bound', () => {
  let trigger: ChangeTrigger = { registries: ['config'], files: ['f0.yaml'] };
  for (let i = 1; i < 100; i++)
    trigger = mergeTriggers(trigger, { registries: ['config'], files: [`f${i}.yaml`] }) ?? trigger;
  assert.equal(trigger.files.length, MAX_TRIGGER_NAMES);
  assert.equal(trigger.files[0], 'f0.yaml');
});

test('sameData says what comparing the JSON of two values says, for plain data', () => {
  let seed = 11;
  const next = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  // Values from a small alphabet, in a fixed key order (as registry objects are built), so that
  // equal data is frequent and comparing JSON text is the reference. An object's key may hold
  // undefined (JSON leaves it out); arrays hold none (JSON would write null), nor do registry arrays.
  const leaves: unknown[] = [1, 'a', 'b', true, false, null, 0];
  const value = (depth: number, inObject: boolean): unknown => {
    const r = next();
    if (depth > 2 || r < 0.4) {
      if (inObject && next() < 0.15) return undefined;
      return leaves[Math.floor(next() * leaves.length)];
    }
    if (r < 0.7) return Array.from({ length: Math.floor(next() * 3) }, () => value(depth + 1, false));
    const o: Record<string, unknown> = {};
    for (const k of ['x', 'y', 'z']) if (next() < 0.6) o[k] = value(depth + 1, true);
    return o;
  };
  let equal = 0;
  for (let i = 0; i < 5000; i++) {
    const a = value(0, false);
    const b = next() < 0.3 ? structuredClone(a) : value(0, false);
    const json = JSON.stringify(a) === JSON.stringify(b);
    assert.equal(sameData(a, b), json, `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
    if (json) equal++;
  }
  assert.ok(equal > 1000, `enough equal pairs (${equal})`);
  assert.equal(sameData({ a: 1, b: undefined }, { a: 1 }), true, 'a key holding undefined is absent');
  assert.equal(sameData({ a: 1 }, { a: 1, b: 2 }), false);
  assert.equal(sameData([{ a: [1, 2] }], [{ a: [1, 3] }]), false);
  assert.equal(sameData([1], { 0: 1 }), false, 'an array is not an object with index keys');
  assert.equal(sameData(new Map([[1, 2]]), new Map()), true, 'anything else: by its JSON, as before');
});

test('a merged trigger is debounced at its source only when every part was', () => {
  const edit = { registries: ['config'], files: ['a.yaml'], debounced: true };
  const consul = { registries: ['consul'], files: [] };
  assert.equal(mergeTriggers(edit, { ...edit, files: ['b.yaml'] })?.debounced, true);
  assert.equal(mergeTriggers(edit, consul)?.debounced, undefined);
  assert.equal(mergeTriggers(consul, edit)?.debounced, undefined);
  assert.equal(mergeTriggers(edit, undefined)?.debounced, undefined, 'a part of unknown origin');
  assert.deepEqual(mergeTriggers(undefined, edit)?.files, ['a.yaml']);
  assert.equal(mergeTriggers(consul, undefined), consul);
});
