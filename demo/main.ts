// `npm run demo`: see Portolan work in a minute. Starts (or uses) a control plane on
// examples/config, echo backends on the endpoints that config declares, and the README's proxyless
// gRPC client, then prints the traffic split every second until Ctrl-C, which stops everything.
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CLIENT_SCRIPT } from './client.js';
import { DEMO_HOST, DEMO_PORT, startDemo } from './demo.js';
import { formatWindow } from './split.js';

const USAGE = `usage: npm run demo [-- --config-dir DIR] [--xds-addr HOST:PORT] [--http-addr HOST:PORT]

A control plane already answering at --http-addr (npm start) is used as it is; otherwise the demo
starts one on --config-dir and stops it on exit.
  --config-dir   default examples/config
  --xds-addr     default 127.0.0.1:15010 (port 0: any free port)
  --http-addr    default 127.0.0.1:15014`;

const EXAMPLES = fileURLToPath(new URL('../../examples/config', import.meta.url));

async function main(): Promise<number> {
  let args;
  try {
    args = parseArgs({
      options: {
        'config-dir': { type: 'string', default: EXAMPLES },
        'xds-addr': { type: 'string', default: '127.0.0.1:15010' },
        'http-addr': { type: 'string', default: '127.0.0.1:15014' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (err) {
    console.error(`${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
    return 2;
  }
  if (args.help) {
    console.log(USAGE);
    return 0;
  }
  const httpAddr = args['http-addr'];
  console.log(`Portolan demo: proxyless gRPC calls to xds:///${DEMO_HOST}:${DEMO_PORT}\n`);
  const demo = await startDemo({
    configDir: args['config-dir'],
    xdsAddr: args['xds-addr'],
    httpAddr,
    attach: !/:0$/.test(httpAddr),
    onWindow: (w, backends) => console.log(formatWindow(w, backends)),
    log: (line) => console.log(`  ${line}`),
  });
  const { plane, client } = demo;
  const here = (p: string): string => relative(process.cwd(), p) || '.';
  console.log(
    plane.pid === undefined
      ? `control plane  the one already serving: xDS ${plane.xdsAddress}, admin ${plane.adminBase}`
      : `control plane  portolan serve (pid ${plane.pid}): xDS ${plane.xdsAddress}, admin ${plane.adminBase}`,
  );
  console.log(`               try: curl ${plane.adminBase}/ready   curl ${plane.adminBase}/debug/registryz`);
  console.log(`backends       ${demo.backends().join(', ')} (the endpoints of ${DEMO_HOST} in the config)`);
  console.log(
    `client         GRPC_XDS_BOOTSTRAP=${client.bootstrapPath} node ${here(CLIENT_SCRIPT)} (pid ${client.pid})`,
  );
  console.log(
    `\nEdit the weights in ${here(demo.splitFile)} and save: the split below follows within a second or two.` +
      `\nCtrl-C stops everything the demo started.\n`,
  );

  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  // A second Ctrl-C while stopping ends at once.
  process.once('SIGINT', () => process.exit(130));
  console.log('\nstopping…');
  await demo.stop();
  console.log('stopped: client, backends' + (plane.pid === undefined ? '' : ', control plane'));
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`demo failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
