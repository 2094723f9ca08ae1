// LayeredMap (model/layered-map.ts) against a plain Map: a seeded run of sets and removals over
// versions that fold and do not, where every old version must still read as it did.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LayeredMap } from '../../../model/layered-map.js';

function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

const sortedEntries = (map: ReadonlyMap<number, string>): [number, string][] =>
  [...map.entries()].sort(([a], [b]) => a - b);

test('every version reads like the plain Map it stands for, and old versions never change', () => {
  const next = random(7);
  let plain = new Map(Array.from({ length: 200 }, (_, i) => [i, `v${i}`] as [number, string]));
  let layered = LayeredMap.of(new Map(plain));
  const history: [LayeredMap<number, string>, Map<number, string>][] = [];
  for (let step = 0; step < 400; step++) {
    const updates: [number, string | undefined][] = Array.from({ length: 1 + Math.floor(next() * 4) }, () => [
      Math.floor(next() * 300),
      next() < 0.3 ? undefined : `s${step}`,
    ]);
    const expected = new Map(plain);
    for (const [k, v] of updates) {
      if (v === undefined) expected.delete(k);
      else expected.set(k, v);
    }
    layered = layered.with(updates);
    plain = expected;
    history.push([layered, expected]);

    assert.equal(layered.size, expected.size, `size at step ${step}`);
    for (let k = 0; k < 300; k++) {
      assert.equal(layered.get(k), expected.get(k), `get(${k}) at step ${step}`);
      assert.equal(layered.has(k), expected.has(k), `has(${k}) at step ${step}`);
    }
    assert.deepEqual(sortedEntries(layered), sortedEntries(expected));
    assert.equal([...layered.keys()].length, expected.size);
    assert.deepEqual(new Set(layered.values()), new Set(expected.values()));
  }
  for (const [version, expected] of history)
    assert.deepEqual(sortedEntries(version), sortedEntries(expected));
});

test('a changed value keeps its key in place; added keys come after the base, in order', () => {
  const map = LayeredMap.of(
    new Map([
      ['a', 1],
      ['b', 2],
      ['c', 3],
    ]),
  ).with([
    ['d', 4],
    ['b', 20],
    ['a', undefined],
  ]);
  assert.deepEqual(
    [...map],
    [
      ['b', 20],
      ['c', 3],
      ['d', 4],
    ],
  );
  const seen: string[] = [];
  map.forEach((value, key, self) => {
    assert.equal(self, map);
    seen.push(`${key}=${value}`);
  });
  assert.deepEqual(seen, ['b=20', 'c=3', 'd=4']);
});
