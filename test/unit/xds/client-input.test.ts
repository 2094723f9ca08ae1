// The bounds on what a client sends (xds/server/client-input.ts), and the store's own bound on a
// proxy connection row (store/proxy-history.ts): issue #45, item 5. The end-to-end attack is
// test/integration/ads-client-input-bounds.test.ts.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { silentLogger } from '../../../log/logger.js';
import { PROXY_ROW_LIMITS } from '../../../store/proxy-history.js';
import { Store } from '../../../store/store.js';
import { firstProxy, StreamError } from '../../../xds/server/ads-stream.js';
import {
  boundRequest,
  CLIENT_INPUT_LIMITS,
  nodeBoundsViolation,
  truncated,
} from '../../../xds/server/client-input.js';

const { errorMessageChars, nonceChars, nodeIdChars, nodeFieldChars, nodeMetadataBytes } = CLIENT_INPUT_LIMITS;

test('the bounds are the documented ones', () => {
  assert.deepEqual(CLIENT_INPUT_LIMITS, {
    errorMessageChars: 4096,
    nodeIdChars: 1024,
    nodeFieldChars: 256,
    nodeMetadataBytes: 65536,
    nonceChars: 256,
  });
});

test('a NACK message over 4 KiB is cut with a marker; one within is the same request object', () => {
  const small = { versionInfo: '1', responseNonce: 'n1', errorDetail: { code: 3, message: 'bad' } };
  assert.equal(boundRequest(small), small);
  const big = boundRequest({
    versionInfo: 'v'.repeat(10_000),
    responseNonce: 'n'.repeat(10_000),
    errorDetail: { code: 3, message: 'm'.repeat(1_000_000) },
  });
  assert.equal(big.errorDetail?.code, 3);
  assert.equal(
    big.errorDetail?.message,
    `${'m'.repeat(errorMessageChars)}… [truncated: ${1_000_000 - errorMessageChars} more characters]`,
  );
  assert.ok(
    big.responseNonce.startsWith('n'.repeat(nonceChars)) && big.responseNonce.length < nonceChars + 64,
  );
  assert.ok((big.versionInfo ?? '').length < nonceChars + 64);
  assert.equal(truncated('abc', 3), 'abc');
});

test('node fields over their bound are refused, naming the field; at the bound they pass', () => {
  const at = (n: number, c = 'x'): string => c.repeat(n);
  assert.equal(
    nodeBoundsViolation({
      id: at(nodeIdChars),
      cluster: at(nodeIdChars),
      user_agent_name: at(nodeFieldChars),
      locality: { region: at(nodeFieldChars), zone: at(nodeFieldChars), sub_zone: at(nodeFieldChars) },
      metadata: { A: at(nodeMetadataBytes - 100) },
    }),
    undefined,
  );
  const cases: [string, object][] = [
    ['node.id', { id: at(nodeIdChars + 1) }],
    ['node.cluster', { id: 'a', cluster: at(nodeIdChars + 1) }],
    ['node.user_agent_version', { id: 'a', user_agent_version: at(nodeFieldChars + 1) }],
    ['node.locality.sub_zone', { id: 'a', locality: { sub_zone: at(nodeFieldChars + 1) } }],
    ['node.metadata', { id: 'a', metadata: { A: at(nodeMetadataBytes) } }],
  ];
  for (const [field, node] of cases) {
    assert.match(nodeBoundsViolation(node) ?? '', new RegExp(`^${field.replace(/\./g, '\\.')} is \\d+`));
    assert.throws(
      () => firstProxy(node),
      (err: unknown) =>
        err instanceof StreamError &&
        err.code === grpc.status.INVALID_ARGUMENT &&
        err.message.startsWith(`invalid node: ${field}`),
    );
  }
});

test('the store bounds a proxy connection row whatever it is given', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'portolan-proxy-row-'));
  const store = Store.open({ dataDir, logger: silentLogger });
  try {
    const id = store.proxies.connected('n'.repeat(100_000), 'p'.repeat(100_000), 'grpc');
    assert.ok(id !== undefined);
    store.proxies.disconnected(id, {}, { CDS: { message: 'm'.repeat(1_000_000) } });
    const [row] = store.proxies.recent(1);
    assert.ok(
      row &&
        row.nodeId.length <= PROXY_ROW_LIMITS.textChars + 1 &&
        row.peer.length <= PROXY_ROW_LIMITS.textChars + 1,
    );
    assert.ok(JSON.stringify(row.lastNacks).length < 200, JSON.stringify(row.lastNacks).slice(0, 200));
    assert.match(String(row.lastNacks.truncated), /over 65536/);
  } finally {
    store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
