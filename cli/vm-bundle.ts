// `portolan vm bundle`: everything one VM (or a fleet sharing it: --uses) needs to join the mesh,
// made on the control plane (as Istio's `istioctl x workload entry configure`): a join token, the
// trust bundle as root-cert.pem, and agent.env, the EnvironmentFile of the packaged
// portolan-agent.service (docs/install.md). Like `token create` it writes through SQLite
// transactions (or PostgreSQL), so it runs beside a running serve on the same data dir or store.
// Before writing anything it dials --ca-addr as the agent will and refuses an address whose
// certificate does not name the host: a bundle that cannot enroll is found here, not on the VM.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join, resolve } from 'node:path';
import { connect } from 'node:tls';
import type { Command } from 'commander';
import { parseDuration } from '../ca/duration.js';
import { controlPlaneAddresses } from '../ca/control-plane-addresses.js';
import { CONTROL_PLANE_SNI, controlPlaneCheck, hostOf } from '../ca/control-plane-check.js';
import { workloadIdentity } from '../ca/identity.js';
import { createSharedJoinToken } from '../ca/join-tokens.js';
import { CA_DEFAULTS, compileCaServeOptions } from './ca-options.js';
import { openCa } from './ca-serve.js';
import { TOKEN_ENV } from './cert.js';
import { envVariableName } from './env-options.js';
import { OptionError, parseAddress, parsePositiveInt } from '../adapters/option-values.js';
import { SERVE_DEFAULTS } from './serve-defaults.js';
import { STORE_FLAG_HELP, withCommandStore } from './store-options.js';
import { cliErrors } from './cli-errors.js';

const CHECK_TIMEOUT_MS = 5_000;

interface BundleFlags {
  namespace: string;
  serviceAccount: string;
  group?: string;
  caAddr: string;
  ttl: string;
  uses: string;
  trustDomain: string;
  caDir?: string;
  dataDir: string;
  store?: string;
  out: string;
  installDir: string;
  checkCaAddr: boolean;
}

export function addVmCommand(program: Command): void {
  const vm = program.command('vm').description('VMs joining the mesh.');
  vm.command('bundle')
    .description(
      "Write what a VM needs to join: OUT/agent.env (the join token and the agent's settings, for portolan-agent.service) and OUT/root-cert.pem; prints the steps to install them.",
    )
    .requiredOption('--namespace <ns>', "the VM workload's namespace")
    .requiredOption('--service-account <sa>', "the VM workload's service account")
    .option('--group <name>', 'the WorkloadGroup (in --namespace) the VM registers into')
    .requiredOption(
      '--ca-addr <host:port>',
      "the secure port as the VMs reach it (serve's --secure-xds-addr; its certificate must name the host)",
    )
    .option('--ttl <duration>', "the join token's lifetime (enroll the VMs within it)", '24h')
    .option('--uses <n>', 'how many VMs may enroll with this bundle (a fleet sharing it)', '1')
    .option('--trust-domain <domain>', 'SPIFFE trust domain (as given to serve)', CA_DEFAULTS.trustDomain)
    .option('--ca-dir <dir>', "plug-in CA in Istio's cacerts layout (as given to serve)")
    .option('--data-dir <dir>', 'the data directory of the Portolan', SERVE_DEFAULTS.dataDir)
    .option('--store <url>', STORE_FLAG_HELP)
    .requiredOption('--out <dir>', 'where to write agent.env and root-cert.pem (created if missing)')
    .option('--install-dir <dir>', 'where root-cert.pem goes on the VM (agent.env names it)', '/etc/portolan')
    .option('--no-check-ca-addr', 'do not dial --ca-addr to check its certificate (unreachable from here)')
    .action((flags: BundleFlags, cmd: Command) => cliErrors(cmd, () => writeBundle(flags)));
}

async function writeBundle(flags: BundleFlags): Promise<void> {
  const identity = workloadIdentity(flags.trustDomain, flags.namespace, flags.serviceAccount);
  const ttlMs = parseDuration(flags.ttl, '--ttl');
  const uses = parsePositiveInt(flags.uses, '--uses');
  if (flags.group !== undefined && !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(flags.group))
    throw new OptionError(`--group: "${flags.group}" is not a WorkloadGroup name`);
  const addresses = controlPlaneAddresses(flags.caAddr);
  if (addresses.length === 0) throw new OptionError(`--ca-addr: expected HOST:PORT, got "${flags.caAddr}"`);
  for (const address of addresses) parseAddress(address, '--ca-addr');
  const ca = compileCaServeOptions({
    ...flags,
    secureXdsAddr: 'off',
    caKeyAlgorithm: CA_DEFAULTS.caKeyAlgorithm,
  });
  if (!ca) throw new OptionError('invalid CA options');
  const out = resolve(flags.out);
  await withCommandStore(flags, async ({ material, shared }) => {
    const rootCert = `${(await openCa(ca, material)).trustBundle().trim()}\n`;
    if (flags.checkCaAddr)
      for (const address of addresses) await checkCaAddress(address, rootCert, flags.trustDomain);
    const created = await createSharedJoinToken(shared, identity, ttlMs, uses);
    const rootPath = join(flags.installDir, 'root-cert.pem');
    const settings: [string, string][] = [
      [TOKEN_ENV, created.token],
      [envVariableName('--ca-addr'), flags.caAddr],
      [envVariableName('--namespace'), flags.namespace],
      [envVariableName('--service-account'), flags.serviceAccount],
      [envVariableName('--root-cert'), rootPath],
      ...(flags.trustDomain !== CA_DEFAULTS.trustDomain
        ? [[envVariableName('--trust-domain'), flags.trustDomain] as [string, string]]
        : []),
      ...(flags.group ? [[envVariableName('--group'), flags.group] as [string, string]] : []),
    ];
    mkdirSync(out, { recursive: true });
    const envFile = join(out, 'agent.env');
    writeFileSync(envFile, renderEnvFile(identity, created.expiresAt, uses, settings), { mode: 0o600 });
    chmodSync(envFile, 0o600); // an existing file keeps its mode otherwise
    writeFileSync(join(out, 'root-cert.pem'), rootCert, { mode: 0o644 });
    process.stderr.write(
      `token ${created.id} for ${identity}, ${uses} use(s), expires ${created.expiresAt.toISOString()}\n`,
    );
    process.stdout.write(installSteps(out, flags.installDir));
  });
}

/** systemd EnvironmentFile syntax: NAME=value, double-quoted (systemd unquotes) unless plain. */
export function renderEnvFile(
  identity: string,
  expiresAt: Date,
  uses: number,
  settings: readonly (readonly [string, string])[],
): string {
  const quote = (v: string): string =>
    /^[\w.:,/@+=-]*$/.test(v) ? v : `"${v.replace(/["\\$`]/g, (c) => `\\${c}`)}"`;
  return [
    `# portolan-agent.service settings for ${identity} (portolan vm bundle).`,
    `# The join token enrolls ${uses} VM(s) until ${expiresAt.toISOString()}; after its first certificate`,
    '# an agent renews with the one it holds. Any `portolan agent` flag may be added as PORTOLAN_<FLAG>.',
    ...settings.map(([name, value]) => `${name}=${quote(value)}`),
    '',
  ].join('\n');
}

function installSteps(out: string, installDir: string): string {
  return [
    `Wrote ${join(out, 'agent.env')} (the join token: keep it secret) and ${join(out, 'root-cert.pem')}.`,
    'On each VM, with the portolan package installed (docs/install.md):',
    `  1. copy root-cert.pem to ${join(installDir, 'root-cert.pem')}`,
    `  2. copy agent.env to ${join(installDir, 'agent.env')}, owned by root, mode 0600:`,
    `       install -m 0600 -o root -g root agent.env ${join(installDir, 'agent.env')}`,
    '  3. start the agent: systemctl enable --now portolan-agent',
    '  4. check it: systemctl status portolan-agent; curl -s 127.0.0.1:15021/healthz/ready',
    '',
  ].join('\n');
}

/** Dials the secure port as an agent would and checks its certificate names the host dialled. */
async function checkCaAddress(address: string, rootCert: string, trustDomain: string): Promise<void> {
  const { host, port } = parseAddress(address, '--ca-addr');
  const check = controlPlaneCheck(address, trustDomain);
  const name = hostOf(address);
  await new Promise<void>((done, failed) => {
    const socket = connect({
      host,
      port,
      ca: rootCert,
      servername: isIP(name) ? CONTROL_PLANE_SNI : name,
      ALPNProtocols: ['h2'],
      checkServerIdentity: check.checkServerIdentity,
      timeout: CHECK_TIMEOUT_MS,
    });
    const refuse = (why: string): void => {
      socket.destroy();
      failed(new OptionError(`--ca-addr ${address}: ${why}`));
    };
    socket.once('secureConnect', () => {
      socket.end();
      done();
    });
    socket.once('timeout', () =>
      refuse(
        `no TLS handshake within ${CHECK_TIMEOUT_MS / 1000} s (--no-check-ca-addr if it is unreachable from here)`,
      ),
    );
    socket.once('error', (err: NodeJS.ErrnoException) => {
      const identity = check.lastFailure();
      if (identity) return refuse(identity.message);
      if (err.code === 'ECONNREFUSED')
        return refuse(
          'nothing listens there: is portolan serve running with --secure-xds-addr on that port? (--no-check-ca-addr if it is unreachable from here)',
        );
      if (/wrong version number|packet length too long/i.test(err.message))
        return refuse(
          "that port does not speak TLS: is it serve's plaintext --xds-addr instead of its --secure-xds-addr?",
        );
      if (/self.signed|unable to verify|certificate/i.test(err.message))
        return refuse(
          `its certificate is not from this Portolan's CA (${err.message}): is --data-dir/--store the one that serve uses?`,
        );
      refuse(`${err.message} (--no-check-ca-addr if it is unreachable from here)`);
    });
  });
}
