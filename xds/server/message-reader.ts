// Reads a stream's requests straight off its HTTP/2 stream, in order, as the DATA frames arrive.
// grpc-js hands each message to the application through a pause of the HTTP/2 stream, a promise
// (its decompression step, uncompressed messages too), an object-mode Readable and a resume on the
// next tick: in the proxyless connect storm (2,000 streams, 16,000 requests) that machinery was about
// a tenth of the server's CPU (docs/benchmarks.md). Here gRPC's message framing (a compressed flag,
// a 4-byte length, the message) is read directly and each message handed over synchronously.
//
// grpc-js keeps everything else: response headers and status, deadlines, cancellation, and the
// client's half-close, which still arrives as the call's 'end'. Its limits hold here too: a message
// longer than `maxBytes` ends the stream with RESOURCE_EXHAUSTED as soon as its length is read,
// before its bytes are buffered; a compressed one (gzip, deflate) is inflated to at most `maxBytes`.
// Without the HTTP/2 stream (call-internals.ts) messages come from the call's 'data' as before.
import * as grpc from '@grpc/grpc-js';
import { gunzipSync, inflateSync } from 'node:zlib';
import { http2StreamOf, incomingEncodingOf, type ServerCall } from '../protocol/call-internals.js';

/** Called with each request message, in order. */
export type MessageSink = (message: Buffer) => void;

/** Called once when the requests cannot be read; nothing more is delivered after it. */
export type ReadFailure = (code: grpc.status, details: string) => void;

const HEADER = 5;

/** gRPC's length-prefixed messages, from DATA frames of any size and alignment. */
export class MessageFramer {
  /** Bytes of an incomplete message (its header at least partly), kept until the rest arrives. */
  private parts: Buffer[] = [];
  private buffered = 0;
  /** The incomplete message's length once its header is in, else -1. */
  private expected = -1;
  private failed = false;

  constructor(
    private readonly maxBytes: number,
    /** The request's grpc-encoding, for messages whose compressed flag is set. */
    private readonly encoding: string,
    private readonly onMessage: MessageSink,
    private readonly onFailure: ReadFailure,
  ) {}

  push(chunk: Buffer): void {
    if (this.failed) return;
    let buf = chunk;
    if (this.buffered > 0) {
      this.parts.push(chunk);
      this.buffered += chunk.length;
      if (this.expected < 0 && this.buffered >= HEADER) {
        this.expected = this.lengthOf(Buffer.concat(this.parts, HEADER), 0);
        if (this.expected < 0) return;
      }
      if (this.expected < 0 || this.buffered < HEADER + this.expected) return;
      buf = Buffer.concat(this.parts, this.buffered);
      this.parts = [];
      this.buffered = 0;
      this.expected = -1;
    }
    let at = 0;
    while (buf.length - at >= HEADER) {
      const length = this.lengthOf(buf, at);
      if (length < 0) return;
      if (buf.length - at - HEADER < length) break;
      this.deliver(buf[at] === 1, buf.subarray(at + HEADER, at + HEADER + length));
      if (this.failed) return;
      at += HEADER + length;
    }
    if (at === buf.length) return;
    const rest = buf.subarray(at);
    this.parts = [rest];
    this.buffered = rest.length;
    if (rest.length >= HEADER) this.expected = this.lengthOf(rest, 0);
  }

  /** The length of the message whose header starts at `at`, or -1 (and the stream fails) if too long. */
  private lengthOf(buf: Buffer, at: number): number {
    const length = buf.readUInt32BE(at + 1);
    if (length <= this.maxBytes) return length;
    // grpc-js's wording, so both paths refuse alike.
    this.fail(
      grpc.status.RESOURCE_EXHAUSTED,
      `Received message larger than max (${length} vs. ${this.maxBytes})`,
    );
    return -1;
  }

  private deliver(compressed: boolean, message: Buffer): void {
    if (!compressed) {
      this.onMessage(message);
      return;
    }
    const inflate =
      this.encoding === 'gzip' ? gunzipSync : this.encoding === 'deflate' ? inflateSync : undefined;
    if (!inflate) {
      this.fail(
        grpc.status.UNIMPLEMENTED,
        `Received message compressed with unsupported encoding "${this.encoding}"`,
      );
      return;
    }
    let plain: Buffer;
    try {
      plain = inflate(message, { maxOutputLength: this.maxBytes });
    } catch (err) {
      const tooLarge = err instanceof RangeError;
      this.fail(
        tooLarge ? grpc.status.RESOURCE_EXHAUSTED : grpc.status.INTERNAL,
        tooLarge
          ? `Received message that decompresses to more than ${this.maxBytes} bytes`
          : `Received message that could not be decompressed (${this.encoding})`,
      );
      return;
    }
    this.onMessage(plain);
  }

  private fail(code: grpc.status, details: string): void {
    this.failed = true;
    this.parts = [];
    this.buffered = 0;
    this.onFailure(code, details);
  }
}

/**
 * Feeds `call`'s request messages to `onMessage`: straight from its HTTP/2 stream when grpc-js
 * exposes it (returns true), otherwise through the call's 'data' events (false; grpc-js then
 * enforces the same limits and `onFailure` is never called).
 */
export function readMessages(
  call: ServerCall,
  maxBytes: number,
  onMessage: MessageSink,
  onFailure: ReadFailure,
): boolean {
  const raw = http2StreamOf(call);
  // grpc-js's own reader is the stream's one 'data' listener, added when the call was made; the
  // handler runs before any DATA frame is delivered (grpc-js keeps the stream paused until then).
  const theirs = raw?.listeners('data');
  const reader = theirs?.length === 1 ? theirs[0] : undefined;
  if (!raw || !reader) {
    call.on('data', onMessage);
    return false;
  }
  raw.off('data', reader as (chunk: Buffer) => void);
  const framer = new MessageFramer(maxBytes, incomingEncodingOf(call) ?? 'identity', onMessage, onFailure);
  raw.on('data', (chunk: Buffer) => framer.push(chunk));
  raw.resume();
  // The call's read side, now empty, keeps flowing so that the half-close still ends it.
  call.resume();
  return true;
}
