// The change vocabulary: events merge as the union of their keys, and their triggers as the union
// of registries and files, bounded; a snapshot diff names services and endpoints apart.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  changedHosts,
  changeOf,
  configChanged,
  diffSnapshots,
  endpointsOnly,
  everythingChanged,
  isEmptyChange,
  MAX_TRIGGER_NAMES,
  mergeChanges,
  mergeTriggers,
  sameData,
  type ChangeTrigger,
} from '../../../model/change.js';
import { endpoint, service, servicePort } from '../../support/model-fixtures.js';

test('merged changes keep the union of their triggers', () => {
  const merged = mergeChanges(
    changeOf({ endpoints: ['a'], trigger: { registries: ['config'], files: ['a.yaml'] } }),
    changeOf({ endpoints: ['b'], trigger: { registries: ['mock', 'config'], files: [] } }),
  );
  assert.deepEqual(merged.trigger, { registries: ['config', 'mock'], files: ['a.yaml'] });
  assert.equal(mergeChanges(changeOf({ services: ['a'] }), changeOf({ services: ['b'] })).trigger, undefined);
});

test('merged changes keep the union of every key, and everything wins', () => {
  const hosts = changeOf({ endpoints: ['a', 'b'] });
  const rules = changeOf({ rules: ['r'], kinds: ['sidecars'] });
  for (const merged of [mergeChanges(hosts, rules), mergeChanges(rules, hosts)]) {
    assert.deepEqual([...merged.endpoints].sort(), ['a', 'b']);
    assert.deepEqual([...merged.rules], ['r']);
    assert.deepEqual([...merged.kinds], ['sidecars']);
    assert.equal(merged.everything, false);
    assert.equal(configChanged(merged), true);
    assert.equal(endpointsOnly(merged), false);
    assert.deepEqual([...changedHosts(merged)].sort(), ['a', 'b', 'r']);
  }
  assert.equal(endpointsOnly(hosts), true);
  assert.equal(configChanged(hosts), false);
  const all = mergeChanges(hosts, everythingChanged());
  assert.equal(all.everything, true);
  assert.equal(endpointsOnly(all), false);
  assert.deepEqual([...all.endpoints].sort(), ['a', 'b'], 'the hosts are kept');
  assert.equal(isEmptyChange(changeOf({})), true);
  assert.equal(isEmptyChange(all), false);
});

test('a snapshot diff names the services and the endpoints that changed, apart', () => {
  const svc = service('a.test', [servicePort('http', 80, 'HTTP')]);
  const prev = {
    services: new Map([['a.test', svc]]),
    endpoints: new Map([['a.test', [endpoint('10.0.0.1', { http: 80 })]]]),
  };
  const moved = { ...prev, endpoints: new Map([['a.test', [endpoint('10.0.0.2', { http: 80 })]]]) };
  for (const only of [undefined, ['a.test']]) {
    const change = diffSnapshots(prev, moved, only);
    assert.deepEqual(change && [[...change.services], [...change.endpoints]], [[], ['a.test']]);
    assert.equal(diffSnapshots(prev, { ...prev }, only), undefined, 'equal snapshots: no change');
  }
  const edited = {
    ...prev,
    services: new Map([['a.test', { ...svc, ports: [servicePort('http', 81, 'HTTP')] }]]),
  };
  const change = diffSnapshots(prev, edited);
  assert.deepEqual(change && [[...change.services], [...change.endpoints]], [['a.test'], []]);
  const gone = diffSnapshots(prev, { services: new Map(), endpoints: new Map() });
  assert.deepEqual(gone && [[...gone.services], [...gone.endpoints]], [['a.test'], ['a.test']]);
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
