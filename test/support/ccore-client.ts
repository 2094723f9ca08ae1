// gRPC C-core's xDS client (Debian's python3-grpcio, see test/clients/README.md), run as a child
// process: a stricter reader of our resources than grpc-js-xds.
import { execFile } from 'node:child_process';
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

/** Runs `calls` Echo calls through C-core against `xds:///target`; one result per call. */
export async function ccoreEchoCalls(
  target: string,
  xdsAddress: string,
  nodeId: string,
  calls: number,
  {
    waitForReady = true,
    bootstrap: given,
    intervalMs = 20,
  }: {
    waitForReady?: boolean;
    /** Between calls: a longer run keeps the client's xDS stream open longer. */ intervalMs?: number;
    /** A whole bootstrap instead of one for xdsAddress and nodeId. */ bootstrap?: object;
  } = {},
): Promise<CallResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-ccore-'));
  const bootstrap = join(dir, 'bootstrap.json');
  writeFileSync(bootstrap, JSON.stringify(given ?? bootstrapFor(xdsAddress, nodeId)));
  try {
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(
        PYTHON,
        [
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
        ],
        { env: { ...process.env, GRPC_XDS_BOOTSTRAP: bootstrap }, timeout: 60_000 },
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
    return stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as CallResult);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
