// The @grpc/grpc-js-xds client as a process of its own (test/support/grpc-js-stream.ts starts it):
// Echo calls to argv[2]'s target one after another, one JSON line each, until killed. In its own
// process because grpc-js-xds 1.14.1 keeps a ref'd 15-minute timer per deactivated priority after
// its channel closes (PriorityChildImpl.destroy leaves deactivationTimer running), which would hold
// a test process open after a failover and back.
import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import { echoClientClass } from './echo-backend.js';
import { BOOTSTRAP_OPTION, xdsEchoClient, type NodeOptions } from './xds-client.js';

interface ChildOptions {
  readonly target: string;
  readonly xdsAddress: string;
  readonly nodeId: string;
  readonly node: NodeOptions;
  readonly intervalMs: number;
  readonly timeoutMs: number;
  /** A whole bootstrap (e.g. the one an agent wrote), instead of one made of xdsAddress and nodeId. */
  readonly bootstrap?: object;
}

const options = JSON.parse(process.argv[2] ?? '{}') as ChildOptions;
const Client = echoClientClass();
const client = options.bootstrap
  ? new Client(options.target, grpc.credentials.createInsecure(), {
      [BOOTSTRAP_OPTION]: JSON.stringify(options.bootstrap),
    })
  : xdsEchoClient(options.target, options.xdsAddress, options.nodeId, options.node);
process.on('SIGTERM', () => process.exit(0));
for (;;) {
  const line = await new Promise<string>((done) => {
    client.Echo({ message: 'hi' }, { deadline: Date.now() + options.timeoutMs }, (err, res) =>
      done(
        JSON.stringify(
          err
            ? { ok: false, code: String(err.code), details: err.details }
            : { ok: true, backend: res?.backend ?? '' },
        ),
      ),
    );
  });
  process.stdout.write(`${line}\n`);
  await sleep(options.intervalMs);
}
