// The load generators' per-connection source address (bench/load/source-address.ts): a connection
// dialled through dialFrom reaches the server from that loopback address, so per-peer limits see one
// peer per connection, as with a fleet of proxies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { dialFrom, loopbackSource } from '../../../bench/load/source-address.js';

const PATH = '/bench.Peer/Who';
const identity = (b: Buffer): Buffer => b;

test('loopbackSource gives distinct 127/8 addresses, never 127.0.0.1 nor a .0 or .255 host', () => {
  const seen = new Set<string>();
  for (let n = 0; n < 3000; n++) {
    const address = loopbackSource(n);
    assert.match(address, /^127\.\d+\.\d+\.\d+$/);
    assert.notEqual(address, '127.0.0.1');
    const last = Number(address.split('.')[3]);
    assert.ok(last >= 1 && last <= 254, address);
    assert.ok(!seen.has(address), `${address} twice`);
    seen.add(address);
  }
});

test('a client dialled with dialFrom reaches the server from its source address', async () => {
  const server = new grpc.Server();
  server.addService(
    {
      Who: {
        path: PATH,
        requestStream: false,
        responseStream: false,
        requestSerialize: identity,
        requestDeserialize: identity,
        responseSerialize: identity,
        responseDeserialize: identity,
      },
    },
    {
      Who: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) =>
        callback(null, Buffer.from(call.getPeer())),
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  const clients = ['127.0.0.7', '127.0.3.9'].map(
    (source) =>
      [
        source,
        new grpc.Client(dialFrom(`127.0.0.1:${port}`, source), grpc.credentials.createInsecure()),
      ] as const,
  );
  try {
    for (const [source, client] of clients) {
      const peer = await new Promise<string>((resolve, reject) =>
        client.makeUnaryRequest(
          PATH,
          identity,
          identity,
          Buffer.alloc(0),
          { deadline: Date.now() + 10_000 },
          (err, res) => (err || !res ? reject(err ?? new Error('no response')) : resolve(res.toString())),
        ),
      );
      assert.equal(peer.slice(0, peer.lastIndexOf(':')), source);
    }
  } finally {
    for (const [, client] of clients) client.close();
    server.forceShutdown();
  }
});
