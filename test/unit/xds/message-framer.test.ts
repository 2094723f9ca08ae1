// gRPC message framing read straight off the HTTP/2 stream (xds/server/message-reader.ts): messages
// come out whole and in order however the DATA frames cut them, a length over the limit is refused
// as soon as it is read, and compressed messages are inflated within the same limit.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deflateSync, gzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { MessageFramer } from '../../../xds/server/message-reader.js';

/** One length-prefixed gRPC message. */
function framed(message: Buffer, compressed = false): Buffer {
  const header = Buffer.alloc(5);
  header[0] = compressed ? 1 : 0;
  header.writeUInt32BE(message.length, 1);
  return Buffer.concat([header, message]);
}

function reader(maxBytes = 1024, encoding = 'identity') {
  const messages: string[] = [];
  const failures: { code: grpc.status; details: string }[] = [];
  const framer = new MessageFramer(
    maxBytes,
    encoding,
    (m) => messages.push(m.toString()),
    (code, details) => failures.push({ code, details }),
  );
  return { framer, messages, failures };
}

const MESSAGES = ['first request', '', 'x'.repeat(300), 'last'];
const STREAM = Buffer.concat(MESSAGES.map((m) => framed(Buffer.from(m))));

test('messages come out whole and in order, wherever the frames cut them (every pair of cuts)', () => {
  for (let a = 0; a <= STREAM.length; a++) {
    for (let b = a; b <= STREAM.length; b += 7) {
      const { framer, messages, failures } = reader();
      for (const chunk of [STREAM.subarray(0, a), STREAM.subarray(a, b), STREAM.subarray(b)])
        framer.push(chunk);
      assert.deepEqual(messages, MESSAGES, `cut at ${a} and ${b}`);
      assert.deepEqual(failures, []);
    }
  }
});

test('one byte at a time', () => {
  const { framer, messages } = reader();
  for (let i = 0; i < STREAM.length; i++) framer.push(STREAM.subarray(i, i + 1));
  assert.deepEqual(messages, MESSAGES);
});

test('a length over the limit is refused as soon as it is read, also from a split header, and nothing follows', () => {
  const header = framed(Buffer.alloc(0));
  header.writeUInt32BE(1025, 1);
  for (let cut = 0; cut <= 5; cut++) {
    const { framer, messages, failures } = reader(1024);
    framer.push(framed(Buffer.from('fine')));
    framer.push(header.subarray(0, cut));
    if (cut < 5) assert.deepEqual(failures, [], 'not before the length is complete');
    framer.push(header.subarray(cut));
    assert.deepEqual(failures, [
      { code: grpc.status.RESOURCE_EXHAUSTED, details: 'Received message larger than max (1025 vs. 1024)' },
    ]);
    framer.push(framed(Buffer.from('after')));
    assert.deepEqual(messages, ['fine'], 'nothing is delivered after the refusal');
    assert.equal(failures.length, 1);
  }
});

test('a message of exactly the limit is read', () => {
  const { framer, messages, failures } = reader(16);
  framer.push(framed(Buffer.from('y'.repeat(16))));
  assert.deepEqual(messages, ['y'.repeat(16)]);
  assert.deepEqual(failures, []);
});

test('compressed messages are inflated with the request encoding (gzip, deflate), beside plain ones', () => {
  for (const [encoding, compress] of [
    ['gzip', gzipSync],
    ['deflate', deflateSync],
  ] as const) {
    const { framer, messages, failures } = reader(1024, encoding);
    framer.push(Buffer.concat([framed(compress(Buffer.from('packed')), true), framed(Buffer.from('plain'))]));
    assert.deepEqual(messages, ['packed', 'plain'], encoding);
    assert.deepEqual(failures, []);
  }
});

test('compressed messages that cannot be read are refused: unknown encoding, over the limit once inflated, corrupt', () => {
  const cases: [string, Buffer, grpc.status, RegExp][] = [
    ['snappy', gzipSync(Buffer.from('a')), grpc.status.UNIMPLEMENTED, /unsupported encoding "snappy"/],
    ['identity', gzipSync(Buffer.from('a')), grpc.status.UNIMPLEMENTED, /unsupported encoding "identity"/],
    ['gzip', gzipSync(Buffer.alloc(100_000)), grpc.status.RESOURCE_EXHAUSTED, /more than 1024 bytes/],
    ['gzip', Buffer.from('not gzip'), grpc.status.INTERNAL, /could not be decompressed \(gzip\)/],
  ];
  for (const [encoding, body, code, details] of cases) {
    const { framer, messages, failures } = reader(1024, encoding);
    framer.push(Buffer.concat([framed(body, true), framed(Buffer.from('after'))]));
    assert.deepEqual(messages, [], encoding);
    assert.equal(failures.length, 1);
    assert.equal(failures[0]?.code, code);
    assert.match(failures[0]?.details ?? '', details);
  }
});
