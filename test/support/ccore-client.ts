// gRPC C-core's xDS client (Debian's python3-grpcio, see test/clients/README.md), run as a child
// process: a stricter reader of our resources than grpc-js-xds.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startCallStream, type CallResult, type CallStream } from './call-stream.js';
import { bootstrapFor, type NodeOptions } from './xds-client.js';

export type { CallResult } from './call-stream.js';

const SCRIPT = fileURLToPath(new URL('../../../test/clients/xds_echo_client.py', import.meta.url));
const PYTHON = '/usr/bin/python3';

export interface CcoreOptions {
  /** Queue calls until the channel is ready (bounded by each call's deadline); default true. */
  readonly waitForReady?: boolean;
  /** The whole bootstrap (e.g. with certificate_providers); default a plain one for `nodeId`. */
  readonly bootstrap?: object;
  /** The node's locality and extra metadata in the default bootstrap. */
  readonly node?: NodeOptions;
  /** Full method path; default /portolan.echo.Echo/Echo. */
  readonly method?: string;
  /** xDS channel credentials (gRFC A29: the clusters' TLS, with the bootstrap's providers). */
  readonly xdsCreds?: boolean;
  /** Pause between calls; default 20 ms. */
  readonly intervalMs?: number;
  /** Deadline of each call; default 5 s. */
  readonly timeoutS?: number;
}

/** Runs `calls` Echo calls through C-core against `xds:///target`; one result per call. */
export async function ccoreEchoCalls(
  target: string,
  xdsAddress: string,
  nodeId: string,
  calls: number,
  options: CcoreOptions = {},
): Promise<CallResult[]> {
  const { dir, args, env } = prepare(target, xdsAddress, nodeId, calls, options);
  try {
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(PYTHON, args, { env, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 }, (err, out, stderr) =>
        err
          ? reject(
              new Error(
                `C-core client failed (${err.signal ?? `exit ${err.code}`}): ${err.message}\n${stderr}`,
              ),
            )
          : resolve(out),
      );
    });
    return stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as CallResult);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A C-core client calling on and on (at most `maxCalls`), its results growing as they come. */
export function startCcoreEchoStream(
  target: string,
  xdsAddress: string,
  nodeId: string,
  maxCalls: number,
  options: CcoreOptions = {},
): CallStream {
  const { dir, args, env } = prepare(target, xdsAddress, nodeId, maxCalls, options);
  return startCallStream(PYTHON, args, env, () => rmSync(dir, { recursive: true, force: true }));
}

function prepare(
  target: string,
  xdsAddress: string,
  nodeId: string,
  calls: number,
  options: CcoreOptions,
): { dir: string; args: string[]; env: NodeJS.ProcessEnv } {
  const { waitForReady = true, intervalMs = 20, timeoutS = 5, method, xdsCreds = false } = options;
  const dir = mkdtempSync(join(tmpdir(), 'portolan-ccore-'));
  const bootstrap = join(dir, 'bootstrap.json');
  writeFileSync(
    bootstrap,
    JSON.stringify(options.bootstrap ?? bootstrapFor(xdsAddress, nodeId, options.node)),
  );
  const args = [
    SCRIPT,
    ...['--target', target, '--calls', String(calls), '--timeout-s', String(timeoutS)],
    ...['--interval-ms', String(intervalMs)],
    ...(waitForReady ? ['--wait-for-ready'] : []),
    ...(method ? ['--method', method] : []),
    ...(xdsCreds ? ['--xds-creds'] : []),
  ];
  return { dir, args, env: { ...process.env, GRPC_XDS_BOOTSTRAP: bootstrap } };
}
