// Run by `npm test` before anything else: the system packages some suites use (a second xDS client
// in gRPC C-core, a real ZooKeeper, kubectl, headless Chromium, PostgreSQL). Each is checked the way its tests use it. As root,
// missing ones are installed with apt-get; otherwise they are named with the command to install
// them, and npm test stops here, before any test runs. One line per package below.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const ok = (command, args) => spawnSync(command, args, { stdio: 'ignore' }).status === 0;
const onPath = (command) => ok('sh', ['-c', `command -v ${command}`]);

/** Debian package, what it gives the tests, and whether it is there already. */
const NEEDED = [
  {
    deb: 'python3-grpcio',
    why: "gRPC C-core's xDS client (test/clients/xds_echo_client.py)",
    present: () => ok('/usr/bin/python3', ['-c', 'import grpc']),
  },
  {
    deb: 'zookeeper',
    why: 'a real ZooKeeper server for the zookeeper registry',
    present: () => existsSync('/usr/share/java/zookeeper.jar'),
  },
  {
    deb: 'chromium',
    why: 'headless Chromium for the dashboard tests (driven by playwright-core)',
    present: () => existsSync('/usr/bin/chromium'),
  },
  {
    deb: 'kubernetes-client',
    why: 'kubectl, against the stand-in Kubernetes API server',
    present: () => onPath('kubectl'),
  },
  {
    deb: 'systemd',
    why: 'systemd-analyze verify, on the packaged units (test/e2e/package.test.ts)',
    present: () => onPath('systemd-analyze'),
  },
  {
    deb: 'postgresql',
    why: 'a real PostgreSQL server for the shared store (replicas on one database)',
    present: () => ok('sh', ['-c', 'ls /usr/lib/postgresql/*/bin/initdb']),
  },
];

const missing = () => NEEDED.filter((p) => !p.present());

function install(debs) {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const run = (args) => spawnSync('apt-get', args, { stdio: 'inherit', env }).status === 0;
  console.log(`test setup: installing ${debs.join(' ')} (apt-get, as root)`);
  return run(['update', '-q']) && run(['install', '-y', '-q', '--no-install-recommends', ...debs]);
}

let lacking = missing();
if (lacking.length > 0 && process.getuid?.() === 0 && onPath('apt-get')) {
  install(lacking.map((p) => p.deb));
  lacking = missing();
}
if (lacking.length > 0) {
  const width = Math.max(...lacking.map((p) => p.deb.length));
  const debs = lacking.map((p) => p.deb).join(' ');
  console.error(
    [
      'npm test needs these Debian packages, which are not installed:',
      ...lacking.map((p) => `  ${p.deb.padEnd(width)}  ${p.why}`),
      'Install them, then run npm test again (as root, npm test installs them itself):',
      `  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${debs}`,
    ].join('\n'),
  );
  process.exit(1);
}
