// The cache fallback is one deadline per stream (issue #45, item 2): a node the control plane does
// not answer gets what is cached for it once the fallback time after its first request has passed,
// every type then — LDS, and RDS, CDS, EDS as it asks for them after — not one fallback time per
// type (which served LDS, RDS, CDS after 3, 6, 9 s). The timers are node:test's mock, the stream a
// real SotwProxyStream whose control plane opens streams and never answers them.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { mock, test } from 'node:test';
import type { UpstreamConnection } from '../../../agent/upstream/connection.js';
import { cacheKey } from '../../../agent/xds/cache-key.js';
import type { LocalCall } from '../../../agent/xds/local-stream.js';
import { claimNode } from '../../../agent/xds/messages.js';
import { NodeCache } from '../../../agent/xds/node-cache.js';
import { SotwProxyStream } from '../../../agent/xds/sotw-proxy-stream.js';
import { silentLogger } from '../../../log/logger.js';
import { encodeResource } from '../../../xds/proto/resource.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../../xds/proto/type-urls.js';
import { decodeDiscoveryResponse, encodeDiscoveryRequest } from '../../../xds/proto/wire.js';

const IDENTITY = { trustDomain: 'cluster.local', namespace: 'shop', serviceAccount: 'cart' };
const FALLBACK_MS = 3000;
const NODE = { id: 'cart.vm-1', cluster: 'c', user_agent_name: 'gRPC Node Pure JS' };

/** A control plane that takes every stream and never says a word. */
function silentUpstream(): UpstreamConnection {
  const fake = {
    state: 'up',
    openStream: () =>
      Object.assign(new EventEmitter(), {
        write: () => true,
        cancel: () => {},
        pause: () => {},
        resume: () => {},
      }),
    onRotate: () => () => {},
    whenRetry: () => () => {},
    reportSuccess: () => {},
    reportFailure: () => {},
  };
  return fake as unknown as UpstreamConnection;
}

function localCall(written: Buffer[]): LocalCall {
  const call = Object.assign(new EventEmitter(), {
    write: (b: Buffer) => {
      written.push(b);
      return true;
    },
    end: () => {},
  });
  call.on('error', () => {});
  return call as unknown as LocalCall;
}

test('one deadline per stream: after it, every type the node asks for comes from the cache at once', (t) => {
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_000_000 });
  t.after(() => mock.timers.reset());
  const first = encodeDiscoveryRequest({ node: NODE, type_url: LISTENER, resource_names: [] });
  const claim = claimNode(first, 'sotw', IDENTITY);
  assert.ok(claim.ok);
  const cache = new NodeCache({ maxNodes: 8, maxBytes: 1 << 20 });
  const key = cacheKey('cart.vm-1', claim.node);
  const all = { wildcard: true, names: new Set<string>() };
  cache.applySotw(key, LISTENER, 'l1', [encodeResource(LISTENER, 'l', { name: 'l' })], all);
  cache.applySotw(key, ROUTE, 'r1', [encodeResource(ROUTE, 'r', { name: 'r' })], {
    wildcard: false,
    names: new Set(['r']),
  });
  cache.applySotw(key, CLUSTER, 'c1', [encodeResource(CLUSTER, 'c', { name: 'c' })], all);
  cache.applySotw(key, ENDPOINT, 'e1', [encodeResource(ENDPOINT, 'c', { cluster_name: 'c' })], {
    wildcard: false,
    names: new Set(['c']),
  });
  const written: Buffer[] = [];
  const stream = new SotwProxyStream('local-1', 'sotw', 'test', localCall(written), {
    connection: silentUpstream(),
    cache,
    identity: IDENTITY,
    logger: silentLogger,
    fallbackMs: FALLBACK_MS,
  });
  t.after(() => stream.close());
  stream.handle(first);
  mock.timers.tick(FALLBACK_MS - 1);
  assert.equal(written.length, 0, 'the control plane gets its fallback time');
  mock.timers.tick(1);
  const types = (): string[] => written.map((b) => decodeDiscoveryResponse(b).type_url);
  assert.deepEqual(types(), [LISTENER]);
  // The client ACKs and asks for the next type, as Envoy does; no more time passes.
  const ackAndAsk = (typeUrl: string, names: string[]): void => {
    const last = decodeDiscoveryResponse(written.at(-1) ?? Buffer.alloc(0));
    stream.handle(
      encodeDiscoveryRequest({
        type_url: last.type_url,
        version_info: last.version_info,
        response_nonce: last.nonce,
      }),
    );
    stream.handle(encodeDiscoveryRequest({ type_url: typeUrl, resource_names: names }));
  };
  ackAndAsk(ROUTE, ['r']);
  ackAndAsk(CLUSTER, []);
  ackAndAsk(ENDPOINT, ['c']);
  assert.deepEqual(types(), [LISTENER, ROUTE, CLUSTER, ENDPOINT]);
});
