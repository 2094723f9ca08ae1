// A SotW response on the wire is a shared body (encoded once per type, names and version) with the
// stream's nonce appended as its own field; the writer frames both into one buffer. What a client
// decodes must equal the response protobufjs encodes whole, nonce included.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodeResource } from '../../../xds/proto/resource.js';
import { CLUSTER } from '../../../xds/proto/type-urls.js';
import {
  decodeDiscoveryResponse,
  encodeDiscoveryResponse,
  encodeResponseBody,
  nonceField,
  nonceFieldLength,
  writeNonceField,
} from '../../../xds/proto/wire.js';
import { frame, messageLength } from '../../../xds/server/message-writer.js';

const resources = ['a', 'b'].map((n) =>
  encodeResource(CLUSTER, `outbound|80||${n}.example`, {
    name: `outbound|80||${n}.example`,
    type: 'EDS',
    eds_cluster_config: { eds_config: { ads: {}, resource_api_version: 'V3' } },
  }),
);
const response = { versionInfo: 'v-42', resources, typeUrl: CLUSTER };
const body = encodeResponseBody(response);

// Nonces of every length class: empty, short counters, a long one (two-byte length), non-ASCII.
const NONCES = ['', '1', '12345', 'n'.repeat(200), 'nonce-é-✓', '😀'];

test('a shared body framed with a nonce decodes as the whole response protobufjs encodes', () => {
  for (const nonce of NONCES) {
    const message = { body, nonce };
    const framed = frame(message);
    assert.equal(framed[0], 0, 'not compressed');
    assert.equal(framed.readUInt32BE(1), framed.length - 5, 'the header carries the message length');
    assert.equal(messageLength(message), framed.length - 5);
    const whole = encodeDiscoveryResponse({ ...response, nonce });
    assert.deepEqual(decodeDiscoveryResponse(framed.subarray(5)), decodeDiscoveryResponse(whole), nonce);
    assert.equal(decodeDiscoveryResponse(framed.subarray(5)).nonce, nonce);
  }
});

test('the nonce field written in place is the one nonceField encodes, of the length it reports', () => {
  for (const nonce of NONCES) {
    const expected = nonceField(nonce);
    assert.equal(nonceFieldLength(nonce), expected.length, nonce);
    const out = Buffer.alloc(expected.length + 4, 0xee);
    const end = writeNonceField(out, 2, nonce);
    assert.equal(end, 2 + expected.length);
    assert.deepEqual(out.subarray(2, end), expected);
    assert.equal(out[0], 0xee, 'nothing written before its place');
    assert.equal(out[end], 0xee, 'nothing written past its end');
    // The encoded nonce as protobufjs reads it: field 5, length-delimited, UTF-8.
    assert.equal(decodeDiscoveryResponse(Buffer.concat([body, expected])).nonce, nonce);
  }
});

test('a message in parts or whole frames to the same bytes', () => {
  const tail = nonceField('7');
  const parts = frame([body, tail]);
  assert.deepEqual(parts, frame(Buffer.concat([body, tail])));
  assert.deepEqual(parts, frame({ body, nonce: '7' }));
});
