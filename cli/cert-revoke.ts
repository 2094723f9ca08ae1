// `portolan cert revoke --identity spiffe://… | --serial HEX`: puts certificates on the CA's deny
// list in the store of a (running or not) Portolan. A running `portolan serve` reloads the list
// within a second, refuses the certificates at renewal and at secure ADS, and closes the secure
// streams open with them.
import { Command } from 'commander';
import { IdentityError, parseSpiffeUri } from '../ca/identity.js';
import { normalizeSerial } from '../store/revocations.js';
import { cliErrors } from './cli-errors.js';
import { OptionError } from '../adapters/option-values.js';
import { SERVE_DEFAULTS } from './serve-defaults.js';
import { STORE_FLAG_HELP, withCommandStore } from './store-options.js';

interface RevokeFlags {
  identity?: string;
  serial?: string;
  reason?: string;
  dataDir: string;
  store?: string;
}

/** Adds `revoke` under the `cert` command (cli/cert.ts). */
export function addCertRevokeCommand(program: Command): void {
  const cert = program.commands.find((c) => c.name() === 'cert');
  if (!cert) throw new Error('the cert command must be added first');
  cert.addCommand(
    new Command('revoke')
      .description(
        'Revoke workload certificates: every enrollment and unused join token of an identity, or one certificate and the enrollment it belongs to. A running serve refuses them within seconds and closes their secure streams.',
      )
      .option('--identity <spiffe-uri>', 'every certificate of this identity (spiffe://TD/ns/NS/sa/SA)')
      .option('--serial <hex>', 'one certificate by its serial number (hex, as openssl prints it)')
      .option('--reason <text>', 'why, kept with the revocation and shown in refusals')
      .option('--data-dir <dir>', 'the data directory of the Portolan', SERVE_DEFAULTS.dataDir)
      .option('--store <url>', STORE_FLAG_HELP)
      .action((opts: RevokeFlags, cmd: Command) => cliErrors(cmd, () => revoke(opts))),
  );
}

async function revoke(opts: RevokeFlags): Promise<void> {
  if ((opts.identity === undefined) === (opts.serial === undefined))
    throw new OptionError('cert revoke: give exactly one of --identity and --serial');
  if (opts.identity !== undefined && !parseSpiffeUri(opts.identity))
    throw new IdentityError(
      `--identity ${opts.identity}: expected spiffe://TRUST_DOMAIN/ns/NAMESPACE/sa/SERVICE_ACCOUNT`,
    );
  const serial = opts.serial === undefined ? undefined : normalizeSerial(opts.serial);
  if (serial !== undefined && !/^[0-9a-f]+$/.test(serial))
    throw new OptionError(`--serial ${opts.serial}: expected a hexadecimal serial number`);
  await withCommandStore(opts, async ({ shared }) => {
    const now = new Date();
    if (opts.identity !== undefined) {
      const outcome = await shared.revokeIdentity(opts.identity, now, opts.reason);
      process.stderr.write(
        `identity ${opts.identity} revoked: ${outcome.enrollments} enrollment(s) and ${outcome.tokens} unused join token(s); ` +
          'a new join token created from now on enrolls it again\n',
      );
    } else if (serial !== undefined) {
      const known = await shared.issuedBySerial(serial);
      const outcome = await shared.revokeSerial(serial, now, opts.reason);
      process.stderr.write(
        outcome.enrollmentId
          ? `certificate ${serial} (${known?.identity ?? '?'}) revoked with its enrollment ${outcome.enrollmentId}: its renewals are refused too\n`
          : `certificate ${serial} revoked${known ? ` (${known.identity}, issued before enrollments)` : ' (not in the issuance log: only this certificate is refused)'}\n`,
      );
    }
    process.stderr.write(
      'a running portolan serve applies it within seconds, closing the secure streams it reaches\n',
    );
  });
}
