// The agent's node cache (agent/xds/node-cache.ts) and its files (cache-file.ts): what an ACKed
// response teaches it per xDS rule (complete LDS/CDS, partial RDS/EDS, delta adds and removals), its
// bounds (least recently used nodes out at once; a node too big alone kept not at all), and the
// round trip through disk, where a corrupt file is dropped with a warning.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pino } from 'pino';
import { CacheFiles } from '../../../agent/xds/cache-file.js';
import { NodeCache, sizeOf, type CachedNode } from '../../../agent/xds/node-cache.js';
import { hashBytes, type EncodedResource } from '../../../xds/proto/resource.js';
import { CLUSTER, ENDPOINT, LISTENER } from '../../../xds/proto/type-urls.js';

function res(typeUrl: string, name: string, body = name, size = 0): EncodedResource {
  const value = Buffer.concat([Buffer.from(body), Buffer.alloc(size)]);
  return { name, typeUrl, value, version: hashBytes(value) };
}

const names = (cache: NodeCache, node: string, typeUrl: string): string[] =>
  [...(cache.get(node, typeUrl)?.resources.keys() ?? [])].sort();

const sub = (...n: string[]) => ({ wildcard: false, names: new Set(n) });
const WILDCARD = { wildcard: true, names: new Set<string>() };

test('SotW: LDS/CDS responses are complete (a subscribed name missing is gone), RDS/EDS may be partial', () => {
  const cache = new NodeCache({ maxNodes: 10, maxBytes: 1 << 20 });
  cache.applySotw('n', LISTENER, 'v1', [res(LISTENER, 'a'), res(LISTENER, 'b')], sub('a', 'b'));
  cache.applySotw('n', LISTENER, 'v2', [res(LISTENER, 'a')], sub('a', 'b'));
  assert.deepEqual(names(cache, 'n', LISTENER), ['a'], 'b was removed');
  assert.equal(cache.get('n', LISTENER)?.versionInfo, 'v2');

  cache.applySotw('n', CLUSTER, 'c1', [res(CLUSTER, 'x'), res(CLUSTER, 'y')], WILDCARD);
  cache.applySotw('n', CLUSTER, 'c2', [res(CLUSTER, 'y'), res(CLUSTER, 'z')], WILDCARD);
  assert.deepEqual(names(cache, 'n', CLUSTER), ['y', 'z'], 'a wildcard response replaces the set');

  cache.applySotw('n', ENDPOINT, 'e1', [res(ENDPOINT, 'x'), res(ENDPOINT, 'y')], sub('x', 'y'));
  cache.applySotw('n', ENDPOINT, 'e2', [res(ENDPOINT, 'y', 'y2')], sub('x', 'y'));
  assert.deepEqual(names(cache, 'n', ENDPOINT), ['x', 'y'], 'a partial EDS response keeps x');
  assert.equal(cache.get('n', ENDPOINT)?.resources.get('y')?.value.toString(), 'y2');
  cache.applySotw('n', ENDPOINT, 'e3', [], sub('y'));
  assert.deepEqual(names(cache, 'n', ENDPOINT), ['y'], 'x is no longer subscribed');
});

test('delta: added and changed resources are kept, removed ones dropped; unsubscribing forgets', () => {
  const cache = new NodeCache({ maxNodes: 10, maxBytes: 1 << 20 });
  cache.applyDelta('n', CLUSTER, 's1', [res(CLUSTER, 'x'), res(CLUSTER, 'y')], []);
  cache.applyDelta('n', CLUSTER, 's2', [res(CLUSTER, 'z')], ['x']);
  assert.deepEqual(names(cache, 'n', CLUSTER), ['y', 'z']);
  cache.forget('n', CLUSTER, ['z']);
  assert.deepEqual(names(cache, 'n', CLUSTER), ['y']);
});

test('bounds: the least recently used node goes first, at once; a node too big alone is not kept', () => {
  const changed: [string, boolean][] = [];
  const listener = {
    changed: (id: string, node: CachedNode | undefined) => changed.push([id, node !== undefined]),
  };
  let now = 0;
  const r = res(LISTENER, 'l', 'l', 1000);
  const cache = new NodeCache({ maxNodes: 2, maxBytes: sizeOf(r) * 2 + 10 }, listener, () => ++now);
  cache.applySotw('a', LISTENER, '1', [r], sub('l'));
  cache.applySotw('b', LISTENER, '1', [r], sub('l'));
  cache.get('a', LISTENER); // a is now more recent than b
  cache.applySotw('c', LISTENER, '1', [r], sub('l'));
  assert.deepEqual(
    cache
      .list()
      .map((n) => n.nodeId)
      .sort(),
    ['a', 'c'],
    'b, least recently used, made room for c',
  );
  assert.ok(
    changed.some(([id, present]) => id === 'b' && !present),
    'the eviction is reported (its file goes)',
  );
  assert.ok(cache.bytes <= sizeOf(r) * 2 + 10);

  const huge = res(LISTENER, 'h', 'h', 10_000);
  cache.applySotw('d', LISTENER, '1', [huge], sub('h'));
  assert.equal(cache.node('d'), undefined, 'a config above the byte limit is not kept at all');
  assert.equal(cache.exceededLimit('d'), true);
  assert.deepEqual(
    cache
      .list()
      .map((n) => n.nodeId)
      .sort(),
    ['a', 'c'],
    'and it evicted nobody',
  );
});

test('the cache files round-trip; a corrupt file is dropped with a warning, the others load', () => {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-agent-cache-'));
  const warnings: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => warnings.push(line) });
  try {
    const files = new CacheFiles(dir, logger, { maxFileBytes: 1 << 20 });
    const cache = new NodeCache({ maxNodes: 10, maxBytes: 1 << 20 }, files);
    cache.applySotw('node-1', LISTENER, 'v1', [res(LISTENER, 'a')], sub('a'));
    cache.applyDelta('node-2', CLUSTER, 's1', [res(CLUSTER, 'x', 'bytes\u0000\u00ff')], []);
    files.flush();
    writeFileSync(join(dir, 'ffffffffffffffffffffffffffffffff.json'), '{"format": 1, "nodeId": ');
    assert.equal(readdirSync(dir).length, 3);

    const restored = new NodeCache({ maxNodes: 10, maxBytes: 1 << 20 });
    assert.equal(new CacheFiles(dir, logger, { maxFileBytes: 1 << 20 }).load(restored), 2);
    assert.deepEqual(names(restored, 'node-1', LISTENER), ['a']);
    assert.equal(restored.get('node-1', LISTENER)?.versionInfo, 'v1');
    const x = restored.get('node-2', CLUSTER)?.resources.get('x');
    assert.deepEqual(x?.value, Buffer.from('bytes\u0000\u00ff'), 'bytes survive exactly');
    assert.equal(readdirSync(dir).length, 2, 'the corrupt file is gone');
    assert.ok(warnings.some((w) => w.includes('dropping an unreadable xDS cache file')));

    // An evicted node's file goes too.
    const small = new NodeCache({ maxNodes: 1, maxBytes: 1 << 20 }, files);
    small.applySotw('node-1', LISTENER, 'v2', [res(LISTENER, 'a')], sub('a'));
    small.applySotw('node-3', LISTENER, 'v1', [res(LISTENER, 'b')], sub('b'));
    files.flush();
    const left = new NodeCache({ maxNodes: 10, maxBytes: 1 << 20 });
    new CacheFiles(dir, logger, { maxFileBytes: 1 << 20 }).load(left);
    assert.deepEqual(
      left
        .list()
        .map((n) => n.nodeId)
        .sort(),
      ['node-2', 'node-3'],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
