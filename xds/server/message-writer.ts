// Writes a stream's responses so that a body shared by many streams is never copied per stream.
// grpc-js frames every message into a fresh buffer (5-byte header + a copy of the message), and a
// stream whose client does not read holds that copy until it does: 200 stuck Envoys held 200 copies
// of one 0.5 MB CDS body. Here the frame goes to the call's HTTP/2 stream in parts — the 5-byte
// header, the shared body, the stream's own nonce field — so a stuck stream holds a reference to the
// shared body and a few bytes of its own.
//
// A small message (most proxyless responses: a few hundred bytes) is copied into one buffer with its
// header and written once: one write through the stream machinery costs far more than copying a few
// hundred bytes, and what a stuck stream holds is then that small copy.
//
// The HTTP/2 stream comes from inside the grpc-js call (call-internals.ts); without it, messages go
// through `call.write` as before, copied once.
import type { Http2Session, ServerHttp2Stream } from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import type { BodyAndNonce, OutgoingMessage } from './ads-stream.js';
import { http2StreamOf, type ServerCall } from '../protocol/call-internals.js';
import { nonceField, nonceFieldLength, writeNonceField } from '../proto/wire.js';

/** Messages up to this size are written as one copied buffer; larger ones in uncopied parts. */
export const COPY_BELOW = 16 * 1024;

export class MessageWriter {
  private readonly raw: ServerHttp2Stream | undefined;
  private headersSent = false;

  constructor(private readonly call: ServerCall) {
    this.raw = http2StreamOf(call);
  }

  /** The call's HTTP/2 connection, when known. */
  get session(): Http2Session | undefined {
    return this.raw?.session ?? undefined;
  }

  /** Whether messages are written in parts, uncopied (false: through grpc-js, copied once). */
  get sharesBodies(): boolean {
    return this.raw !== undefined;
  }

  write(message: OutgoingMessage, drained: () => void): void {
    const raw = this.raw;
    if (!raw) {
      this.call.write(Buffer.concat(partsOf(message)), drained);
      return;
    }
    if (raw.destroyed || raw.writableEnded) return; // the call is ending; its close releases the slot
    // Response headers first, as grpc-js sends them before its first message (once per call).
    if (!this.headersSent) {
      this.headersSent = true;
      this.call.sendMetadata(new grpc.Metadata());
    }
    const length = messageLength(message);
    if (length <= COPY_BELOW) {
      raw.write(frame(message, length), drained);
      return;
    }
    const parts = partsOf(message);
    const header = Buffer.allocUnsafe(5);
    header[0] = 0; // not compressed
    header.writeUInt32BE(length, 1);
    raw.cork();
    raw.write(header);
    parts.forEach((p, i) => raw.write(p, i === parts.length - 1 ? () => drained() : undefined));
    raw.uncork();
  }
}

function isBodyAndNonce(message: OutgoingMessage): message is BodyAndNonce {
  return !Buffer.isBuffer(message) && 'nonce' in message;
}

/** The message as buffers to send back to back. */
function partsOf(message: OutgoingMessage): readonly Buffer[] {
  if (Buffer.isBuffer(message)) return [message];
  if (isBodyAndNonce(message)) return [message.body, nonceField(message.nonce)];
  return message;
}

/** The message's length on the wire (without the gRPC frame header). */
export function messageLength(message: OutgoingMessage): number {
  if (Buffer.isBuffer(message)) return message.length;
  if (isBodyAndNonce(message)) return message.body.length + nonceFieldLength(message.nonce);
  let length = 0;
  for (const p of message) length += p.length;
  return length;
}

/** The message as one gRPC frame (5-byte header, then the message), copied into a buffer of its own. */
export function frame(message: OutgoingMessage, length = messageLength(message)): Buffer {
  const out = Buffer.allocUnsafe(5 + length);
  out[0] = 0; // not compressed
  out.writeUInt32BE(length, 1);
  if (isBodyAndNonce(message)) {
    message.body.copy(out, 5);
    writeNonceField(out, 5 + message.body.length, message.nonce);
    return out;
  }
  let at = 5;
  for (const p of Buffer.isBuffer(message) ? [message] : message) at += p.copy(out, at);
  return out;
}
