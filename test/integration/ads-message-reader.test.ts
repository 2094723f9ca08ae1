// The request reader on a real grpc-js server call and a real HTTP/2 client that frames gRPC
// messages by hand: the installed grpc-js exposes the HTTP/2 stream (so requests are read directly),
// messages cut across DATA frames arrive whole and in order, a compressed one is inflated, the
// client's half-close still ends the call, and an oversized length ends the stream with
// RESOURCE_EXHAUSTED before its body is sent.
import assert from 'node:assert/strict';
import { connect, type ClientHttp2Stream, type IncomingHttpHeaders } from 'node:http2';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { bidi } from '../../xds/server/ads-service.js';
import { readMessages } from '../../xds/server/message-reader.js';

const PATH = '/test.Echo/Stream';

interface Served {
  readonly direct: boolean[];
  readonly messages: string[];
  ended: boolean;
}

async function serve(t: TestContext, maxBytes: number): Promise<{ port: number; served: Served }> {
  const served: Served = { direct: [], messages: [], ended: false };
  const server = new grpc.Server();
  server.addService(
    { Stream: bidi(PATH) },
    {
      Stream: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
        served.direct.push(
          readMessages(
            call,
            maxBytes,
            (m) => served.messages.push(m.toString()),
            (code, details) => call.emit('error', { code, details }),
          ),
        );
        call.on('end', () => {
          served.ended = true;
          call.end();
        });
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  t.after(() => server.forceShutdown());
  return { port, served };
}

function framed(message: Buffer, compressed = false): Buffer {
  const header = Buffer.alloc(5);
  header[0] = compressed ? 1 : 0;
  header.writeUInt32BE(message.length, 1);
  return Buffer.concat([header, message]);
}

/** A call by hand; `status` resolves with grpc-status from the trailers (or a trailers-only response). */
function call(
  t: TestContext,
  port: number,
  encoding = 'identity',
): { req: ClientHttp2Stream; status: Promise<{ code: number; message: string }> } {
  const session = connect(`http://127.0.0.1:${port}`);
  t.after(() => session.destroy());
  const req = session.request({
    ':method': 'POST',
    ':path': PATH,
    'content-type': 'application/grpc',
    te: 'trailers',
    'grpc-encoding': encoding,
  });
  req.resume();
  const status = new Promise<{ code: number; message: string }>((resolve, reject) => {
    const read = (h: IncomingHttpHeaders): void => {
      if (h['grpc-status'] !== undefined)
        resolve({
          code: Number(h['grpc-status']),
          message: decodeURIComponent(String(h['grpc-message'] ?? '')),
        });
    };
    req.on('response', read);
    req.on('trailers', read);
    req.on('error', reject);
  });
  return { req, status };
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (check()) return;
    await sleep(10);
  }
  assert.fail(`timed out waiting for ${what}`);
}

test('requests are read straight off the HTTP/2 stream, whole and in order across DATA frames; the half-close ends the call', async (t) => {
  const { port, served } = await serve(t, 4096);
  const { req, status } = call(t, port, 'gzip');
  const bytes = Buffer.concat([
    framed(Buffer.from('one')),
    framed(Buffer.from('two'.repeat(200))),
    framed(gzipSync(Buffer.from('three, compressed')), true),
  ]);
  // Cut through headers and bodies, each part its own write (and, after a pause, its own frame).
  for (const [from, to] of [
    [0, 2],
    [2, 9],
    [9, 300],
    [300, bytes.length],
  ] as const) {
    req.write(bytes.subarray(from, to));
    await sleep(5);
  }
  await until(() => served.messages.length === 3, 'three messages');
  assert.deepEqual(served.direct, [true], 'the installed grpc-js exposes the HTTP/2 stream');
  assert.deepEqual(served.messages, ['one', 'two'.repeat(200), 'three, compressed']);
  req.end();
  assert.deepEqual(await status, { code: grpc.status.OK, message: 'OK' });
  assert.equal(served.ended, true);
});

test('a length over the limit ends the stream with RESOURCE_EXHAUSTED before its body is sent', async (t) => {
  const { port, served } = await serve(t, 1024);
  const { req, status } = call(t, port);
  const header = Buffer.alloc(5);
  header.writeUInt32BE(1_000_000, 1);
  req.write(Buffer.concat([framed(Buffer.from('fine')), header]));
  const s = await status;
  assert.equal(s.code, grpc.status.RESOURCE_EXHAUSTED);
  assert.equal(s.message, 'Received message larger than max (1000000 vs. 1024)');
  assert.deepEqual(served.messages, ['fine']);
});
