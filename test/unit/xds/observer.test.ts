// composeObservers: every observer hears every event, in the order given; methods an observer
// leaves out are skipped.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AdsStream } from '../../../xds/server/ads-stream.js';
import { composeObservers, type AdsObserver, type PushInfo } from '../../../xds/server/observer.js';

const stream = { id: 'conn-1', peer: 'ipv4:127.0.0.1:1', api: 'sotw' } as unknown as AdsStream;
const push: PushInfo = {
  round: 1,
  kind: 'eds',
  changesMerged: 2,
  debounceMs: 5,
  trigger: { registries: ['mock'], files: [], hostnames: ['a.internal'], hostnameCount: 1 },
};

test('a composed observer reports each event to every observer in order, skipping absent methods', () => {
  const heard: string[] = [];
  const first: AdsObserver = {
    streamOpened: (s) => heard.push(`first opened ${s.id}`),
    pushConverged: (p, ms) => heard.push(`first converged ${p.kind} ${ms}`),
  };
  const second: AdsObserver = {
    streamOpened: (s) => heard.push(`second opened ${s.id}`),
    streamClosed: (s, reason) => heard.push(`second closed ${s.id} ${reason}`),
  };
  const both = composeObservers(first, {}, second);
  both.streamOpened?.(stream);
  both.streamClosed?.(stream, 'cancelled');
  both.pushConverged?.(push, 12);
  both.responseSent?.(stream, { typeUrl: 't', type: 'EDS', resources: 1, bytes: 10, buildMs: 0.1 });
  assert.deepEqual(heard, [
    'first opened conn-1',
    'second opened conn-1',
    'second closed conn-1 cancelled',
    'first converged eds 12',
  ]);
});

test('composing one observer returns it as it is', () => {
  const only: AdsObserver = {};
  assert.equal(composeObservers(only), only);
});
