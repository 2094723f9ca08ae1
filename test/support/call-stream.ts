// A client process that makes Echo calls one after another and prints one JSON line per call
// (C-core's test/clients/xds_echo_client.py, grpc-js-call-child.ts): its results, growing as they
// come, until it is stopped by its PID. A separate process can be stopped whatever timers its
// gRPC library leaves behind.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface CallResult {
  readonly ok: boolean;
  readonly backend?: string;
  readonly code?: string;
  readonly details?: string;
}

export interface CallStream {
  readonly results: readonly CallResult[];
  /** Stops the process (SIGTERM to its PID), waits for it to exit, then runs the cleanup. */
  stop(): Promise<void>;
}

export function startCallStream(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  cleanup: () => void = () => undefined,
): CallStream {
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const results: CallResult[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    if (line) results.push(JSON.parse(line) as CallResult);
  });
  child.stderr.resume();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    results,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
      cleanup();
    },
  };
}
