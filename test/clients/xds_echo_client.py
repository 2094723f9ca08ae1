#!/usr/bin/python3
"""Echo client on gRPC C-core (Debian python3-grpcio), for checking Portolan's xDS output.

Makes N unary calls to /portolan.echo.Echo/Echo (or --method PATH, same messages) and prints one
JSON line per call:
  {"ok": true, "backend": "..."}
  {"ok": false, "code": "UNAVAILABLE", "details": "..."}
then exits 0. It exits non-zero only on a usage error (2) or when grpc cannot be imported (3).

With an xds:/// target, C-core reads the bootstrap from GRPC_XDS_BOOTSTRAP (a file path) or
GRPC_XDS_BOOTSTRAP_CONFIG (the JSON itself); --bootstrap PATH sets GRPC_XDS_BOOTSTRAP. Any
other target (e.g. 127.0.0.1:50051) is dialled directly, which checks the message encoding
without an xDS server. --xds-creds makes the channel with xDS credentials (gRFC A29): the TLS the
control plane's clusters ask for, with the bootstrap's certificate providers (workload mTLS).

Run it with /usr/bin/python3: python3-grpcio installs into Debian's Python only, not into a
pyenv or venv Python that may come first on PATH.

No generated stubs: the two messages (see demo/echo.proto) are encoded by hand.
  EchoRequest { string message = 1; }
  EchoReply   { string message = 1; string backend = 2; }
"""

import argparse
import json
import os
import sys
import time

METHOD = "/portolan.echo.Echo/Echo"


# ---- protobuf wire format, just enough for two messages of strings ----


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _read_varint(buf, pos):
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def encode_echo_request(message):
    data = message.encode("utf-8")
    if not data:
        return b""  # proto3: an empty string field is not written
    return _varint((1 << 3) | 2) + _varint(len(data)) + data


def decode_echo_reply(buf):
    """Returns {"message": str, "backend": str}; unknown fields are skipped."""
    fields = {1: "", 2: ""}
    pos = 0
    while pos < len(buf):
        key, pos = _read_varint(buf, pos)
        field, wire_type = key >> 3, key & 7
        if wire_type == 0:
            _, pos = _read_varint(buf, pos)
        elif wire_type == 1:
            pos += 8
        elif wire_type == 2:
            length, pos = _read_varint(buf, pos)
            if pos + length > len(buf):
                raise ValueError("truncated length-delimited field")
            chunk = buf[pos : pos + length]
            pos += length
            if field in fields:
                fields[field] = chunk.decode("utf-8")
        elif wire_type == 5:
            pos += 4
        else:
            raise ValueError("unsupported wire type %d" % wire_type)
        if pos > len(buf):
            raise ValueError("truncated fixed-width field")
    return {"message": fields[1], "backend": fields[2]}


# ---- client ----


def emit(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--target", required=True, help="xds:///HOST:PORT, or any plain gRPC target")
    p.add_argument("--calls", type=int, default=1, help="number of unary calls (default 1)")
    p.add_argument("--timeout-s", type=float, default=5.0, help="deadline of each call, seconds")
    p.add_argument("--message", default="hello", help="EchoRequest.message")
    p.add_argument("--interval-ms", type=int, default=0, help="pause between calls")
    p.add_argument(
        "--wait-for-ready",
        action="store_true",
        help="queue each call until the channel is ready (still bounded by --timeout-s)",
    )
    p.add_argument("--bootstrap", help="sets GRPC_XDS_BOOTSTRAP before the channel is made")
    p.add_argument("--method", default=METHOD, help="full method path (default %s)" % METHOD)
    p.add_argument(
        "--xds-creds",
        action="store_true",
        help="xDS channel credentials (TLS from the clusters, plaintext fallback)",
    )
    args = p.parse_args(argv)
    if args.calls < 0:
        p.error("--calls must be >= 0")
    if not args.timeout_s > 0:
        p.error("--timeout-s must be > 0")
    if args.interval_ms < 0:
        p.error("--interval-ms must be >= 0")
    if args.target.startswith("xds:") and not (
        args.bootstrap
        or os.environ.get("GRPC_XDS_BOOTSTRAP")
        or os.environ.get("GRPC_XDS_BOOTSTRAP_CONFIG")
    ):
        p.error("an xds: target needs GRPC_XDS_BOOTSTRAP, GRPC_XDS_BOOTSTRAP_CONFIG or --bootstrap")
    return args


def main(argv):
    args = parse_args(argv)
    if args.bootstrap:
        os.environ["GRPC_XDS_BOOTSTRAP"] = args.bootstrap  # read by C-core when the channel is made

    try:
        import grpc
        import grpc.experimental
    except ImportError as e:
        sys.stderr.write(
            "cannot import grpc (%s): apt-get install python3-grpcio and run with /usr/bin/python3\n" % e
        )
        return 3

    if args.xds_creds:
        creds = grpc.xds_channel_credentials(grpc.experimental.insecure_channel_credentials())
        channel = grpc.secure_channel(args.target, creds)
    else:
        channel = grpc.insecure_channel(args.target)
    try:
        echo = channel.unary_unary(
            args.method,
            request_serializer=encode_echo_request,
            response_deserializer=decode_echo_reply,
        )
        for i in range(args.calls):
            if i and args.interval_ms:
                time.sleep(args.interval_ms / 1000.0)
            try:
                reply = echo(
                    args.message,
                    timeout=args.timeout_s,
                    wait_for_ready=True if args.wait_for_ready else None,
                )
                emit({"ok": True, "backend": reply["backend"], "message": reply["message"]})
            except grpc.RpcError as e:
                code = e.code() if hasattr(e, "code") else None
                emit(
                    {
                        "ok": False,
                        "code": code.name if code is not None else "UNKNOWN",
                        "details": (e.details() if hasattr(e, "details") else str(e)) or "",
                    }
                )
            except Exception as e:  # a bug in this client, e.g. a reply it cannot decode
                emit({"ok": False, "code": "CLIENT_ERROR", "details": "%s: %s" % (type(e).__name__, e)})
    finally:
        channel.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
