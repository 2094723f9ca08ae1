// The real @grpc/grpc-js-xds client calling on and on from a child process
// (grpc-js-call-child.ts says why a process of its own).
import { fileURLToPath } from 'node:url';
import { startCallStream, type CallStream } from './call-stream.js';
import type { NodeOptions } from './xds-client.js';

const CHILD = fileURLToPath(new URL('./grpc-js-call-child.js', import.meta.url));

export function startGrpcJsEchoStream(
  target: string,
  xdsAddress: string,
  nodeId: string,
  {
    node = {},
    intervalMs = 10,
    timeoutMs = 2000,
    bootstrap,
  }: { node?: NodeOptions; intervalMs?: number; timeoutMs?: number; bootstrap?: object } = {},
): CallStream {
  const options = {
    target,
    xdsAddress,
    nodeId,
    node,
    intervalMs,
    timeoutMs,
    ...(bootstrap && { bootstrap }),
  };
  return startCallStream(process.execPath, [CHILD, JSON.stringify(options)], process.env);
}
