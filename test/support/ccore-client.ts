// gRPC C-core's xDS client (Debian's python3-grpcio, see test/clients/README.md), run as a child
// process: a stricter reader of our resources than grpc-js-xds.
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bootstrapFor } from './xds-client.js';

const SCRIPT = fileURLToPath(new URL('../../../test/clients/xds_echo_client.py', import.meta.url));
const PYTHON = '/usr/bin/python3';

export interface CallResult {
  readonly ok: boolean;
  readonly backend?: string;
  readonly code?: string;
  readonly details?: string;
}

export interface CcoreOptions {
  /** Queue calls until the channel is ready (bounded by each call's 5 s deadline); default true. */
  readonly waitForReady?: boolean;
  /** The whole bootstrap (e.g. with certificate_providers); default a plain one for `nodeId`. */
  readonly bootstrap?: object;
  /** Full method path; default /portolan.echo.Echo/Echo. */
  readonly method?: string;
  /** xDS channel credentials (gRFC A29: the clusters' TLS, with the bootstrap's providers). */
  readonly xdsCreds?: boolean;
  /** Pause between calls; default 20 ms. */
  readonly intervalMs?: number;
}

function scriptArgs(target: string, calls: number, options: CcoreOptions): string[] {
  const { waitForReady = true, method, xdsCreds = false, intervalMs = 20 } = options;
  return [
    SCRIPT,
    ...[
      '--target',
      target,
      '--calls',
      String(calls),
      '--timeout-s',
      '5',
      '--interval-ms',
      String(intervalMs),
    ],
    ...(waitForReady ? ['--wait-for-ready'] : []),
    ...(method ? ['--method', method] : []),
    ...(xdsCreds ? ['--xds-creds'] : []),
  ];
}

/** A temporary bootstrap file for one run; `cleanup` removes it. */
function writeBootstrap(xdsAddress: string, nodeId: string, options: CcoreOptions) {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-ccore-'));
  const path = join(dir, 'bootstrap.json');
  writeFileSync(path, JSON.stringify(options.bootstrap ?? bootstrapFor(xdsAddress, nodeId)));
  return { path, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

function parseLines(stdout: string): CallResult[] {
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as CallResult);
}

/** Runs `calls` Echo calls through C-core against `xds:///target`; one result per call. */
export async function ccoreEchoCalls(
  target: string,
  xdsAddress: string,
  nodeId: string,
  calls: number,
  options: CcoreOptions = {},
): Promise<CallResult[]> {
  const bootstrap = writeBootstrap(xdsAddress, nodeId, options);
  try {
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(
        PYTHON,
        scriptArgs(target, calls, options),
        { env: { ...process.env, GRPC_XDS_BOOTSTRAP: bootstrap.path }, timeout: 60_000 },
        (err, out, stderr) =>
          err
            ? reject(
                new Error(
                  `C-core client failed (${err.signal ?? `exit ${err.code}`}): ${err.message}\n${stderr}`,
                ),
              )
            : resolve(out),
      );
    });
    return parseLines(stdout);
  } finally {
    bootstrap.cleanup();
  }
}

/** A C-core client making calls one after another while the test changes things around it. */
export interface CcoreCallStream {
  /** The results so far, in call order. */
  results(): CallResult[];
  /** Stops the client (by its PID) and waits for it to exit. */
  stop(): Promise<void>;
}

/** Starts `calls` calls, `intervalMs` apart, in one C-core process (one channel, one xDS client). */
export function startCcoreEchoStream(
  target: string,
  xdsAddress: string,
  nodeId: string,
  calls: number,
  options: CcoreOptions = {},
): CcoreCallStream {
  const bootstrap = writeBootstrap(xdsAddress, nodeId, options);
  const child = spawn(PYTHON, scriptArgs(target, calls, options), {
    env: { ...process.env, GRPC_XDS_BOOTSTRAP: bootstrap.path },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let stdout = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => (stdout += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    results: () => parseLines(stdout.slice(0, stdout.lastIndexOf('\n') + 1)),
    async stop() {
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined)
        process.kill(child.pid, 'SIGTERM');
      await exited;
      bootstrap.cleanup();
    },
  };
}
