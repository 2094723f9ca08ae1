// The demo's client is the README's: examples/grpc-client/echo-client.mjs, a proxyless
// @grpc/grpc-js-xds client, run as a child process with a bootstrap file (GRPC_XDS_BOOTSTRAP) made
// from examples/grpc-client/bootstrap.json with the control plane's address. Each line it prints
// ("answered by NAME" or "error: ...") is handed to `onCall`. Stopped by its PID.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CLIENT_SCRIPT = fileURLToPath(
  new URL('../../examples/grpc-client/echo-client.mjs', import.meta.url),
);
export const CLIENT_BOOTSTRAP = fileURLToPath(
  new URL('../../examples/grpc-client/bootstrap.json', import.meta.url),
);

/** The outcome of one call: the backend that answered, or the error. */
export type CallResult = { readonly backend: string } | { readonly error: string };

export interface DemoClient {
  readonly pid: number | undefined;
  readonly bootstrapPath: string;
  stop(): Promise<void>;
}

interface Bootstrap {
  xds_servers: { server_uri: string }[];
}

/** examples/grpc-client/bootstrap.json pointed at `xdsAddress`, written into `dir`. */
export function writeBootstrap(dir: string, xdsAddress: string): string {
  const bootstrap = JSON.parse(readFileSync(CLIENT_BOOTSTRAP, 'utf8')) as Bootstrap;
  for (const server of bootstrap.xds_servers) server.server_uri = xdsAddress;
  const path = join(dir, 'bootstrap.json');
  writeFileSync(path, `${JSON.stringify(bootstrap, null, 2)}\n`);
  return path;
}

export function startClient(bootstrapPath: string, onCall: (result: CallResult) => void): DemoClient {
  const child = spawn(process.execPath, [CLIENT_SCRIPT], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, GRPC_XDS_BOOTSTRAP: bootstrapPath },
  });
  let buffer = '';
  child.stdout?.setEncoding('utf8');
  child.stdout?.on('data', (chunk: string) => {
    buffer += chunk;
    let nl;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      const answered = /^answered by (.+)$/.exec(line);
      if (answered?.[1]) onCall({ backend: answered[1] });
      else if (line.startsWith('error: ')) onCall({ error: line.slice('error: '.length) });
    }
  });
  child.stderr?.resume(); // grpc-js logs nothing by default; drained so it can never block
  return { pid: child.pid, bootstrapPath, stop: () => stopChild(child) };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  await exited;
}
