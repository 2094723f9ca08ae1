// The ACK fast path reads what the full protobufjs decoder reads, and defers anything else to it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readPlainDeltaRequest, readPlainRequest } from '../../../xds/server/request-reader.js';
import { ENDPOINT } from '../../../xds/proto/type-urls.js';
import {
  decodeDeltaDiscoveryRequest,
  decodeDiscoveryRequest,
  encodeDeltaDiscoveryRequest,
  encodeDiscoveryRequest,
} from '../../../xds/proto/wire.js';

test('a SotW ACK and NACK read the same as with the full decoder', () => {
  for (const req of [
    { type_url: ENDPOINT, version_info: 'v1', response_nonce: '7', resource_names: ['a', 'b'] },
    {
      type_url: ENDPOINT,
      version_info: 'v1',
      response_nonce: '8',
      resource_names: ['a'],
      error_detail: { code: 3, message: 'bad cluster ü' },
    },
  ]) {
    const bytes = encodeDiscoveryRequest(req);
    assert.deepEqual(readPlainRequest(bytes), decodeDiscoveryRequest(bytes));
  }
});

test('a SotW request with node goes to the full decoder', () => {
  const bytes = encodeDiscoveryRequest({ node: { id: 'n1' }, type_url: ENDPOINT });
  assert.equal(readPlainRequest(bytes), undefined);
});

test('a delta ACK, NACK and subscription change read the same as with the full decoder', () => {
  for (const req of [
    { type_url: ENDPOINT, response_nonce: '3' },
    { type_url: ENDPOINT, response_nonce: '4', error_detail: { code: 13, message: 'no' } },
    { type_url: ENDPOINT, resource_names_subscribe: ['a'], resource_names_unsubscribe: ['b'] },
  ]) {
    const bytes = encodeDeltaDiscoveryRequest(req);
    assert.deepEqual(readPlainDeltaRequest(bytes), decodeDeltaDiscoveryRequest(bytes));
  }
});

test('a delta request with initial versions goes to the full decoder', () => {
  const bytes = encodeDeltaDiscoveryRequest({ type_url: ENDPOINT, initial_resource_versions: { a: 'v1' } });
  assert.equal(readPlainDeltaRequest(bytes), undefined);
});

test('a truncated request is left to the full decoder', () => {
  const bytes = encodeDiscoveryRequest({ type_url: ENDPOINT, response_nonce: '1' });
  assert.equal(readPlainRequest(bytes.subarray(0, bytes.length - 1)), undefined);
});

test('a request listing more names than the limit is left to the counting path, at or under it is read', () => {
  const sotw = encodeDiscoveryRequest({
    type_url: ENDPOINT,
    response_nonce: '1',
    resource_names: ['a', 'b', 'c'],
  });
  assert.equal(readPlainRequest(sotw, 2), undefined);
  assert.deepEqual(readPlainRequest(sotw, 3)?.resourceNames, ['a', 'b', 'c']);
  const delta = encodeDeltaDiscoveryRequest({
    type_url: ENDPOINT,
    resource_names_subscribe: ['a', 'b'],
    resource_names_unsubscribe: ['c'],
  });
  assert.equal(readPlainDeltaRequest(delta, 2), undefined);
  assert.deepEqual(readPlainDeltaRequest(delta, 3)?.unsubscribe, ['c']);
});

test('a known type URL reads as the same string as the constant', () => {
  const bytes = encodeDiscoveryRequest({ type_url: ENDPOINT, response_nonce: '1' });
  assert.equal(readPlainRequest(bytes)?.typeUrl, ENDPOINT);
  const other = encodeDiscoveryRequest({ type_url: 'type.googleapis.com/x.Y', response_nonce: '1' });
  assert.equal(readPlainRequest(other)?.typeUrl, 'type.googleapis.com/x.Y');
});
