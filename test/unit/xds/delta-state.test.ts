// The incremental (delta) xDS protocol rules, one test each, against the pure DeltaStreamState:
// wildcard subscribe/unsubscribe, named subscriptions and re-subscription, what a reconnecting
// client holds (initial_resource_versions), and ACK/NACK by nonce.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DeltaStreamState } from '../../../xds/protocol/delta-state.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../../xds/proto/type-urls.js';
import type { DeltaDiscoveryRequest } from '../../../xds/proto/wire.js';

const AT = '2024-01-01T00:00:00.000Z';
const LATER = '2024-01-01T00:00:05.000Z';

function req(
  typeUrl: string,
  fields: Partial<Omit<DeltaDiscoveryRequest, 'typeUrl'>> = {},
): DeltaDiscoveryRequest {
  return {
    typeUrl,
    subscribe: [],
    unsubscribe: [],
    initialVersions: new Map(),
    responseNonce: '',
    ...fields,
  };
}

function names(s: DeltaStreamState, typeUrl: string): string[] {
  return [...(s.type(typeUrl)?.names ?? [])].sort();
}

// Wildcard

for (const typeUrl of [CLUSTER, LISTENER]) {
  test(`${typeUrl.split('.').at(-1)}: a first request subscribing to nothing is wildcard`, () => {
    const s = new DeltaStreamState();
    const outcome = s.onRequest(req(typeUrl));
    assert.deepEqual(outcome, {
      action: 'subscribe',
      changed: { added: [], wildcardEntered: true, first: true },
    });
    assert.equal(s.type(typeUrl)?.wildcard, true);
  });
}

for (const typeUrl of [ENDPOINT, ROUTE]) {
  test(`${typeUrl.split('.').at(-1)}: no wildcard, even for a first request subscribing to nothing or to "*"`, () => {
    const s = new DeltaStreamState();
    s.onRequest(req(typeUrl));
    assert.equal(s.type(typeUrl)?.wildcard, false);
    const outcome = s.onRequest(req(typeUrl, { subscribe: ['*'] }));
    assert.deepEqual(outcome, {
      action: 'subscribe',
      changed: { added: [], wildcardEntered: false, first: false },
    });
    assert.equal(s.type(typeUrl)?.wildcard, false);
    assert.deepEqual(names(s, typeUrl), [], '"*" is not a resource name');
  });
}

test('a first request naming resources is not wildcard; subscribing to "*" later enters wildcard mode', () => {
  const s = new DeltaStreamState();
  s.onRequest(req(CLUSTER, { subscribe: ['a'] }));
  assert.equal(s.type(CLUSTER)?.wildcard, false);
  const outcome = s.onRequest(req(CLUSTER, { subscribe: ['*'] }));
  assert.deepEqual(outcome, {
    action: 'subscribe',
    changed: { added: [], wildcardEntered: true, first: false },
  });
  assert.equal(s.type(CLUSTER)?.wildcard, true);
  assert.deepEqual(names(s, CLUSTER), ['a'], 'the named subscription stays beside the wildcard');
});

test('subscribing to names while in wildcard mode keeps wildcard (unlike SotW)', () => {
  const s = new DeltaStreamState();
  s.onRequest(req(CLUSTER));
  const outcome = s.onRequest(req(CLUSTER, { subscribe: ['a'] }));
  assert.deepEqual(outcome.changed, { added: ['a'], wildcardEntered: false, first: false });
  assert.equal(s.type(CLUSTER)?.wildcard, true);
});

test('unsubscribing from "*" leaves wildcard mode and keeps the named subscriptions', () => {
  const s = new DeltaStreamState();
  s.onRequest(req(CLUSTER, { subscribe: ['*', 'a'] }));
  assert.equal(s.type(CLUSTER)?.wildcard, true);
  const outcome = s.onRequest(req(CLUSTER, { unsubscribe: ['*'] }));
  assert.deepEqual(outcome.changed, { added: [], wildcardEntered: false, first: false });
  assert.equal(s.type(CLUSTER)?.wildcard, false);
  assert.deepEqual(names(s, CLUSTER), ['a']);
});

test('"*" again after unsubscribing from it re-enters wildcard mode', () => {
  const s = new DeltaStreamState();
  s.onRequest(req(LISTENER));
  s.onRequest(req(LISTENER, { unsubscribe: ['*'] }));
  const outcome = s.onRequest(req(LISTENER, { subscribe: ['*'] }));
  assert.equal(outcome.changed.wildcardEntered, true);
  assert.equal(s.type(LISTENER)?.wildcard, true);
});

// Named subscriptions

test('subscribing adds only the names not yet subscribed', () => {
  const s = new DeltaStreamState();
  assert.deepEqual(s.onRequest(req(ENDPOINT, { subscribe: ['a', 'b'] })).changed.added, ['a', 'b']);
  assert.deepEqual(s.onRequest(req(ENDPOINT, { subscribe: ['b', 'c'] })).changed.added, ['c']);
  assert.deepEqual(s.onRequest(req(ENDPOINT, { subscribe: ['a'] })).changed.added, []);
  assert.deepEqual(names(s, ENDPOINT), ['a', 'b', 'c']);
});

test('unsubscribing removes the name and forgets the version the client held', () => {
  const s = new DeltaStreamState();
  s.onRequest(req(ENDPOINT, { subscribe: ['a', 'b'] }));
  const t = s.type(ENDPOINT);
  t?.known.set('a', 'v1');
  t?.known.set('b', 'v1');
  s.onRequest(req(ENDPOINT, { unsubscribe: ['a'] }));
  assert.deepEqual(names(s, ENDPOINT), ['b']);
  assert.deepEqual([...(s.type(ENDPOINT)?.known.keys() ?? [])], ['b']);
});

test('re-subscribing after an unsubscribe adds the name again, with nothing held for it', () => {
  const s = new DeltaStreamState();
  s.onRequest(req(ENDPOINT, { subscribe: ['a'] }));
  s.type(ENDPOINT)?.known.set('a', 'v1');
  s.onRequest(req(ENDPOINT, { unsubscribe: ['a'] }));
  const outcome = s.onRequest(req(ENDPOINT, { subscribe: ['a'] }));
  assert.deepEqual(outcome.changed.added, ['a'], 'answered again even if unchanged');
  assert.deepEqual(names(s, ENDPOINT), ['a']);
  assert.equal(s.type(ENDPOINT)?.known.has('a'), false);
});

test('in wildcard mode, unsubscribing a name keeps what the client holds (it still gets it as wildcard)', () => {
  const s = new DeltaStreamState();
  s.onRequest(req(CLUSTER, { subscribe: ['*', 'a'] }));
  s.type(CLUSTER)?.known.set('a', 'v1');
  s.onRequest(req(CLUSTER, { unsubscribe: ['a'] }));
  assert.deepEqual(names(s, CLUSTER), []);
  assert.equal(s.type(CLUSTER)?.known.get('a'), 'v1');
});

test('a name both subscribed and unsubscribed in one request ends unsubscribed', () => {
  const s = new DeltaStreamState();
  s.onRequest(req(ENDPOINT, { subscribe: ['a'], unsubscribe: ['a'] }));
  assert.deepEqual(names(s, ENDPOINT), []);
});

// What a reconnecting client holds

test('initial_resource_versions of the first request become what the client holds, deleted names included', () => {
  const s = new DeltaStreamState();
  const initialVersions = new Map([
    ['a', 'v1'],
    ['gone', 'v7'], // a resource deleted while the client was away: the connection reports it removed
  ]);
  s.onRequest(req(CLUSTER, { initialVersions }));
  assert.deepEqual([...(s.type(CLUSTER)?.known ?? [])].sort(), [
    ['a', 'v1'],
    ['gone', 'v7'],
  ]);
  assert.deepEqual(names(s, CLUSTER), [], 'holding is not subscribing');
});

test('initial_resource_versions on a later request of the same type are ignored', () => {
  const s = new DeltaStreamState();
  s.onRequest(req(CLUSTER, { initialVersions: new Map([['a', 'v1']]) }));
  s.onRequest(req(CLUSTER, { initialVersions: new Map([['b', 'v2']]) }));
  assert.deepEqual([...(s.type(CLUSTER)?.known.keys() ?? [])], ['a']);
});

test('initial_resource_versions are kept per type', () => {
  const s = new DeltaStreamState();
  s.onRequest(req(CLUSTER, { initialVersions: new Map([['a', 'v1']]) }));
  s.onRequest(req(ENDPOINT, { subscribe: ['a'], initialVersions: new Map([['a', 'e1']]) }));
  assert.equal(s.type(CLUSTER)?.known.get('a'), 'v1');
  assert.equal(s.type(ENDPOINT)?.known.get('a'), 'e1');
});

// ACK and NACK by nonce

test('a request without a nonce is a subscription change, neither ACK nor NACK', () => {
  const s = new DeltaStreamState();
  s.onRequest(req(ENDPOINT, { subscribe: ['a'] }));
  s.recordSent(ENDPOINT, 'n1', AT);
  const outcome = s.onRequest(req(ENDPOINT, { subscribe: ['b'] }));
  assert.equal(outcome.action, 'subscribe');
  assert.equal(s.type(ENDPOINT)?.ackedNonce, undefined);
  assert.equal(s.type(ENDPOINT)?.inFlight.has('n1'), true, 'n1 is still unanswered');
});

test('an ACK names its nonce, records it and when, and answers the in-flight response', () => {
  const s = new DeltaStreamState();
  s.onRequest(req(ENDPOINT, { subscribe: ['a'] }));
  s.recordSent(ENDPOINT, 'n1', AT);
  s.recordSent(ENDPOINT, 'n2', AT);
  const outcome = s.onRequest(req(ENDPOINT, { responseNonce: 'n1' }), LATER);
  assert.deepEqual(outcome, {
    action: 'ack',
    nonce: 'n1',
    changed: { added: [], wildcardEntered: false, first: false },
  });
  const t = s.type(ENDPOINT);
  assert.equal(t?.ackedNonce, 'n1');
  assert.equal(t?.ackedAt, LATER);
  assert.deepEqual([...(t?.inFlight.keys() ?? [])], ['n2']);
  assert.equal(t?.lastNonce, 'n2');
});

test('a NACK names its nonce, is recorded with its message and counted, and keeps the last ACK', () => {
  const s = new DeltaStreamState();
  s.onRequest(req(ENDPOINT, { subscribe: ['a'] }));
  s.recordSent(ENDPOINT, 'n1', AT);
  s.onRequest(req(ENDPOINT, { responseNonce: 'n1' }), AT);
  s.recordSent(ENDPOINT, 'n2', AT);
  const outcome = s.onRequest(
    req(ENDPOINT, { responseNonce: 'n2', errorDetail: { code: 3, message: 'bad endpoint' } }),
    LATER,
  );
  assert.equal(outcome.action, 'nack');
  assert.equal(outcome.action === 'nack' && outcome.nonce, 'n2');
  const t = s.type(ENDPOINT);
  assert.deepEqual(t?.nack, { version: 'n2', nonce: 'n2', code: 3, message: 'bad endpoint', at: LATER });
  assert.equal(t?.nackCount, 1);
  assert.equal(t?.ackedNonce, 'n1', 'the last ACK is kept');
  assert.equal(t?.ackedAt, AT);
  assert.equal(t?.inFlight.size, 0);
});

test('a later ACK clears the NACK but not its count', () => {
  const s = new DeltaStreamState();
  s.onRequest(req(ENDPOINT, { subscribe: ['a'] }));
  s.recordSent(ENDPOINT, 'n1', AT);
  s.onRequest(req(ENDPOINT, { responseNonce: 'n1', errorDetail: { code: 3, message: 'bad' } }));
  s.recordSent(ENDPOINT, 'n2', AT);
  s.onRequest(req(ENDPOINT, { responseNonce: 'n2' }));
  const t = s.type(ENDPOINT);
  assert.equal(t?.nack, undefined);
  assert.equal(t?.nackCount, 1);
  assert.equal(t?.ackedNonce, 'n2');
});

test('an ACK that also subscribes is both: recorded, and the new name is added', () => {
  const s = new DeltaStreamState();
  s.onRequest(req(ENDPOINT, { subscribe: ['a'] }));
  s.recordSent(ENDPOINT, 'n1', AT);
  const outcome = s.onRequest(req(ENDPOINT, { responseNonce: 'n1', subscribe: ['b'] }));
  assert.equal(outcome.action, 'ack');
  assert.deepEqual(outcome.changed.added, ['b']);
  assert.equal(s.type(ENDPOINT)?.ackedNonce, 'n1');
});

test('ACKs and NACKs are kept per type URL', () => {
  const s = new DeltaStreamState();
  s.onRequest(req(CLUSTER));
  s.onRequest(req(ENDPOINT, { subscribe: ['a'] }));
  s.recordSent(CLUSTER, 'n1', AT);
  s.recordSent(ENDPOINT, 'n2', AT);
  s.onRequest(req(CLUSTER, { responseNonce: 'n1', errorDetail: { code: 3, message: 'bad cluster' } }));
  s.onRequest(req(ENDPOINT, { responseNonce: 'n2' }));
  assert.equal(s.type(CLUSTER)?.nack?.message, 'bad cluster');
  assert.equal(s.type(ENDPOINT)?.nack, undefined);
  assert.equal(s.type(ENDPOINT)?.ackedNonce, 'n2');
  assert.deepEqual(s.watchedTypes().sort(), [CLUSTER, ENDPOINT].sort());
});

test('a client that never answers holds at most 16 nonces in flight, the oldest dropped', () => {
  const s = new DeltaStreamState();
  s.onRequest(req(ENDPOINT, { subscribe: ['a'] }));
  for (let i = 1; i <= 20; i++) s.recordSent(ENDPOINT, `n${i}`, AT);
  const inFlight = [...(s.type(ENDPOINT)?.inFlight.keys() ?? [])];
  assert.equal(inFlight.length, 16);
  assert.equal(inFlight[0], 'n5');
  assert.equal(s.type(ENDPOINT)?.lastNonce, 'n20');
});

test('recordSent for a type never requested is ignored', () => {
  const s = new DeltaStreamState();
  s.recordSent(CLUSTER, 'n1', AT);
  assert.equal(s.type(CLUSTER), undefined);
  assert.deepEqual(s.watchedTypes(), []);
});
