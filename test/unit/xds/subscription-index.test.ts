// The subscription index: a push visits the streams naming a changed resource and the wildcard
// subscribers of a changed type, and no others.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ChangeSet } from '../../../xds/server/resource-cache.js';
import { typeKey } from '../../../xds/server/resource-cache.js';
import { SubscriptionIndex } from '../../../xds/server/subscription-index.js';
import { CLUSTER, ENDPOINT } from '../../../xds/proto/type-urls.js';

function changes(typeUrl: string, names: string[]): ChangeSet {
  return {
    all: false,
    names: new Map([[typeKey('grpc', typeUrl), new Set(names)]]),
    types: [{ kind: 'grpc', typeUrl, names: new Set(names) }],
    wildcards: new Set(),
  };
}

test('a change reaches the streams naming it and the wildcard subscribers of its type', () => {
  const index = new SubscriptionIndex<string>();
  index.update('a', 'grpc', ENDPOINT, ['x'], false);
  index.update('b', 'grpc', ENDPOINT, ['y'], false);
  index.update('w', 'grpc', CLUSTER, [], true);
  assert.deepEqual([...index.affected(changes(ENDPOINT, ['x']))], ['a']);
  assert.deepEqual([...index.affected(changes(CLUSTER, ['x']))], ['w']);
});

test('a changed subscription moves the stream; a removed stream is gone', () => {
  const index = new SubscriptionIndex<string>();
  index.update('a', 'grpc', ENDPOINT, ['x'], false);
  index.update('a', 'grpc', ENDPOINT, ['y'], false);
  assert.deepEqual([...index.affected(changes(ENDPOINT, ['x']))], []);
  assert.deepEqual([...index.affected(changes(ENDPOINT, ['y']))], ['a']);
  index.remove('a');
  assert.deepEqual([...index.affected(changes(ENDPOINT, ['y']))], []);
});

test('kinds are kept apart', () => {
  const index = new SubscriptionIndex<string>();
  index.update('envoy', 'envoy', ENDPOINT, ['x'], false);
  assert.deepEqual([...index.affected(changes(ENDPOINT, ['x']))], []);
});

test('a wildcard subscriber that turns to names, or closes, no longer gets every change of the type', () => {
  const index = new SubscriptionIndex<string>();
  index.update('w', 'grpc', CLUSTER, [], true);
  index.update('v', 'grpc', CLUSTER, [], true);
  index.update('w', 'grpc', CLUSTER, ['x'], false);
  assert.deepEqual([...index.affected(changes(CLUSTER, ['y']))], ['v']);
  assert.deepEqual([...index.affected(changes(CLUSTER, ['x']))].sort(), ['v', 'w']);
  index.remove('v');
  assert.deepEqual([...index.affected(changes(CLUSTER, ['y']))], []);
});
