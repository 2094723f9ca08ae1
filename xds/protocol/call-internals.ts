// What Portolan reads from inside a grpc-js server call. grpc-js has no public way to write
// pre-framed bytes or to read a call's messages synchronously, so the ADS server's message-writer.ts
// and message-reader.ts (xds/server/) work on the HTTP/2 stream under the call (grpc-js 1.14 keeps it
// at `call.call.stream`, beside the request's `grpc-encoding` at `call.call.incomingEncoding`); the
// agent's xDS proxy counts local streams per HTTP/2 session by it. When that shape is not found
// (another grpc-js version, interceptors), they fall back to the call's public API;
// test/integration/ads-stream-limits.test.ts ("never read") and
// test/integration/ads-message-reader.test.ts fail if the installed grpc-js stops offering it.
import type { ServerHttp2Stream } from 'node:http2';
import type * as grpc from '@grpc/grpc-js';

/** The server call's side that matters here: grpc-js's ServerDuplexStream. */
export type ServerCall = grpc.ServerDuplexStream<Buffer, Buffer>;

/** grpc-js's call object under the public one, where it keeps the HTTP/2 stream. */
function innerCall(call: ServerCall): { stream?: unknown; incomingEncoding?: unknown } | undefined {
  const inner = (call as unknown as { call?: unknown }).call;
  return typeof inner === 'object' && inner !== null ? inner : undefined;
}

/** The HTTP/2 stream under a grpc-js server call, or undefined when this grpc-js does not expose it. */
export function http2StreamOf(call: ServerCall): ServerHttp2Stream | undefined {
  const stream = innerCall(call)?.stream;
  return isHttp2Stream(stream) ? stream : undefined;
}

/** The request's `grpc-encoding` as grpc-js read it from the headers ('identity' when absent). */
export function incomingEncodingOf(call: ServerCall): string | undefined {
  const encoding = innerCall(call)?.incomingEncoding;
  return typeof encoding === 'string' ? encoding : undefined;
}

function isHttp2Stream(value: unknown): value is ServerHttp2Stream {
  if (typeof value !== 'object' || value === null) return false;
  const s = value as Partial<
    Record<'write' | 'cork' | 'uncork' | 'respond' | 'listeners' | 'resume', unknown>
  > & {
    session?: unknown;
  };
  return (
    typeof s.write === 'function' &&
    typeof s.cork === 'function' &&
    typeof s.uncork === 'function' &&
    typeof s.respond === 'function' &&
    typeof s.listeners === 'function' &&
    typeof s.resume === 'function' &&
    typeof s.session === 'object'
  );
}
