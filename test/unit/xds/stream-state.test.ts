// The xDS state-of-the-world protocol rules, one test each, against the pure StreamState.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StreamState, type RequestView } from '../../../xds/protocol/sotw-state.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../../xds/proto/type-urls.js';

const AT = '2024-01-01T00:00:00.000Z';

function req(typeUrl: string, fields: Partial<RequestView> = {}): RequestView {
  return { typeUrl, versionInfo: '', responseNonce: '', resourceNames: [], ...fields };
}

/** A state where `typeUrl` was requested with `names` and answered with version/nonce. */
function answered(typeUrl: string, names: string[], version = 'v1', nonce = 'n1'): StreamState {
  const s = new StreamState();
  s.onRequest(req(typeUrl, { resourceNames: names }));
  s.recordSent(typeUrl, { version, nonce, names, at: AT });
  return s;
}

function names(s: StreamState, typeUrl: string): string[] {
  return [...(s.subscription(typeUrl)?.names ?? [])].sort();
}

test('an initial request is answered', () => {
  const s = new StreamState();
  assert.deepEqual(s.onRequest(req(ENDPOINT, { resourceNames: ['a'] })), {
    action: 'initial',
    respond: true,
  });
  assert.deepEqual(s.watchedTypes(), [ENDPOINT]);
  assert.equal(s.shouldSend(ENDPOINT, 'v1', true), true);
});

test('shouldSend refuses a type the client never requested', () => {
  const s = new StreamState();
  assert.equal(s.shouldSend(CLUSTER, 'v1', true), false);
});

test('an ACK records the acked version and is not answered when names are unchanged', () => {
  const s = answered(ENDPOINT, ['a']);
  const outcome = s.onRequest(
    req(ENDPOINT, { versionInfo: 'v1', responseNonce: 'n1', resourceNames: ['a'] }),
    AT,
  );
  assert.deepEqual(outcome, { action: 'ack', respond: false });
  assert.equal(s.typeState(ENDPOINT)?.ackedVersion, 'v1');
  assert.equal(s.typeState(ENDPOINT)?.ackedAt, AT);
  assert.equal(s.typeState(ENDPOINT)?.nack, undefined);
});

test('after an ACK, the same version is not sent again but a new one is', () => {
  const s = answered(ENDPOINT, ['a']);
  s.onRequest(req(ENDPOINT, { versionInfo: 'v1', responseNonce: 'n1', resourceNames: ['a'] }));
  assert.equal(s.shouldSend(ENDPOINT, 'v1', false), false);
  assert.equal(s.shouldSend(ENDPOINT, 'v2', false), true);
});

test('a NACK records version, nonce and message and keeps the last ACKed version', () => {
  const s = answered(CLUSTER, []);
  s.onRequest(req(CLUSTER, { versionInfo: 'v1', responseNonce: 'n1' }));
  s.recordSent(CLUSTER, { version: 'v2', nonce: 'n2', names: [], at: AT });
  const outcome = s.onRequest(
    req(CLUSTER, {
      versionInfo: 'v1',
      responseNonce: 'n2',
      errorDetail: { code: 3, message: 'bad cluster' },
    }),
    AT,
  );
  assert.deepEqual(outcome, { action: 'nack', respond: false });
  const state = s.typeState(CLUSTER);
  assert.deepEqual(state?.nack, { version: 'v2', nonce: 'n2', code: 3, message: 'bad cluster', at: AT });
  assert.equal(state?.nackCount, 1);
  assert.equal(state?.ackedVersion, 'v1');
});

test('shouldSend refuses to resend a NACKed version but allows a new one', () => {
  const s = answered(CLUSTER, [], 'v1', 'n1');
  s.onRequest(req(CLUSTER, { responseNonce: 'n1', errorDetail: { code: 3, message: 'no' } }));
  s.recordSent(CLUSTER, { version: 'v3', nonce: 'n2', names: [], at: AT }); // moved on, then the config went back
  assert.equal(s.shouldSend(CLUSTER, 'v1', false), false, 'the NACKed version');
  assert.equal(s.shouldSend(CLUSTER, 'v2', false), true, 'a version the client has not rejected');
  assert.equal(
    s.shouldSend(CLUSTER, 'v1', true),
    true,
    'a forced response (changed subscription) still goes out',
  );
});

test('a request with a stale nonce is ignored whole, including its subscription change', () => {
  const s = answered(ENDPOINT, ['a'], 'v1', 'n1');
  s.recordSent(ENDPOINT, { version: 'v2', nonce: 'n2', names: ['a'], at: AT });
  const outcome = s.onRequest(
    req(ENDPOINT, {
      versionInfo: 'v1',
      responseNonce: 'n1',
      resourceNames: ['a', 'b'],
      errorDetail: { code: 3, message: 'x' },
    }),
  );
  assert.deepEqual(outcome, { action: 'ignore', reason: 'stale-nonce' });
  assert.deepEqual(names(s, ENDPOINT), ['a']);
  assert.equal(s.typeState(ENDPOINT)?.nack, undefined);
  assert.equal(s.typeState(ENDPOINT)?.ackedVersion, undefined);
});

test('a nonce on a type never answered (a reconnecting client) is treated as an initial request', () => {
  const s = new StreamState();
  const outcome = s.onRequest(req(CLUSTER, { versionInfo: 'old-v', responseNonce: 'old-nonce-7' }));
  assert.deepEqual(outcome, { action: 'initial', respond: true });
  assert.equal(s.subscription(CLUSTER)?.wildcard, true, 'its empty list is still a first request');
});

test('a request naming changed resources is answered, forced', () => {
  const s = answered(ENDPOINT, ['a']);
  const outcome = s.onRequest(
    req(ENDPOINT, { versionInfo: 'v1', responseNonce: 'n1', resourceNames: ['a', 'b'] }),
  );
  assert.deepEqual(outcome, { action: 'ack', respond: true });
  assert.deepEqual(names(s, ENDPOINT), ['a', 'b']);
});

test('a NACK that also changes names is answered', () => {
  const s = answered(ROUTE, ['r1']);
  const outcome = s.onRequest(
    req(ROUTE, { responseNonce: 'n1', resourceNames: ['r2'], errorDetail: { code: 3, message: 'x' } }),
  );
  assert.deepEqual(outcome, { action: 'nack', respond: true });
});

// Wildcard rules: which requests leave the subscription in wildcard mode, and with which names.
const wildcardCases: {
  rule: string;
  typeUrl: string;
  requests: string[][];
  wildcard: boolean;
  names: string[];
}[] = [
  {
    rule: 'LDS: a first request with no names is a wildcard',
    typeUrl: LISTENER,
    requests: [[]],
    wildcard: true,
    names: [],
  },
  {
    rule: 'CDS: a first request with no names is a wildcard',
    typeUrl: CLUSTER,
    requests: [[]],
    wildcard: true,
    names: [],
  },
  { rule: 'CDS: "*" is a wildcard', typeUrl: CLUSTER, requests: [['*']], wildcard: true, names: [] },
  {
    rule: 'CDS: "*" with names is a wildcard plus those names',
    typeUrl: CLUSTER,
    requests: [['*', 'a']],
    wildcard: true,
    names: ['a'],
  },
  {
    rule: 'LDS: "*" after names re-enters wildcard',
    typeUrl: LISTENER,
    requests: [['a'], ['*']],
    wildcard: true,
    names: [],
  },
  {
    rule: 'CDS: an empty list while in wildcard stays wildcard',
    typeUrl: CLUSTER,
    requests: [[], []],
    wildcard: true,
    names: [],
  },
  {
    rule: 'CDS: names without "*" leave wildcard',
    typeUrl: CLUSTER,
    requests: [[], ['a']],
    wildcard: false,
    names: ['a'],
  },
  {
    rule: 'LDS: names without "*" leave wildcard',
    typeUrl: LISTENER,
    requests: [['*'], ['a', 'b']],
    wildcard: false,
    names: ['a', 'b'],
  },
  {
    rule: 'CDS: a later empty list after names unsubscribes all',
    typeUrl: CLUSTER,
    requests: [['a'], []],
    wildcard: false,
    names: [],
  },
  {
    rule: 'LDS: a later empty list after leaving wildcard unsubscribes all',
    typeUrl: LISTENER,
    requests: [[], ['a'], []],
    wildcard: false,
    names: [],
  },
  {
    rule: 'RDS: an empty list is not a wildcard',
    typeUrl: ROUTE,
    requests: [[]],
    wildcard: false,
    names: [],
  },
  {
    rule: 'EDS: an empty list is not a wildcard',
    typeUrl: ENDPOINT,
    requests: [[]],
    wildcard: false,
    names: [],
  },
];

for (const c of wildcardCases) {
  test(`wildcard rule — ${c.rule}`, () => {
    const s = new StreamState();
    c.requests.forEach((resourceNames, i) => {
      // Each later request ACKs the previous response, as a client would.
      const responseNonce = i === 0 ? '' : `n${i}`;
      const outcome = s.onRequest(req(c.typeUrl, { responseNonce, resourceNames }));
      assert.notEqual(outcome.action, 'ignore');
      s.recordSent(c.typeUrl, { version: `v${i + 1}`, nonce: `n${i + 1}`, names: [], at: AT });
    });
    assert.equal(s.subscription(c.typeUrl)?.wildcard, c.wildcard);
    assert.deepEqual(names(s, c.typeUrl), c.names);
  });
}

test('leaving wildcard mode counts as a subscription change and is answered', () => {
  const s = answered(CLUSTER, []);
  assert.deepEqual(s.onRequest(req(CLUSTER, { responseNonce: 'n1', resourceNames: ['a'] })), {
    action: 'ack',
    respond: true,
  });
});

test('subscriptions are kept per type URL', () => {
  const s = answered(CLUSTER, []);
  s.onRequest(req(ENDPOINT, { resourceNames: ['e'] }));
  assert.equal(s.subscription(CLUSTER)?.wildcard, true);
  assert.deepEqual(names(s, ENDPOINT), ['e']);
  assert.deepEqual(s.watchedTypes().sort(), [CLUSTER, ENDPOINT].sort());
});
