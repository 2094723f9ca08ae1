// `portolan ca root|rotate`: the trust bundle to copy to VMs, and root rotation.
import type { Command } from 'commander';
import { parseDuration } from '../ca/duration.js';
import { PASSPHRASE_ENV } from '../ca/key-protection.js';
import { KEY_ALGORITHMS, type KeyAlgorithm } from '../ca/keys.js';
import { RootStore } from '../ca/root-store.js';
import { CA_DEFAULTS, compileCaServeOptions } from './ca-options.js';
import { openCa } from './ca-serve.js';
import { cliErrors } from './cli-errors.js';
import { addStoreFlag, withCommandStore } from './store-options.js';
import { OptionError } from '../adapters/option-values.js';
import { SERVE_DEFAULTS } from './serve-defaults.js';

interface CaFlags {
  dataDir: string;
  store?: string;
  trustDomain: string;
  caDir?: string;
  caKeyAlgorithm: string;
}

export function addCaCommand(program: Command): void {
  const ca = program.command('ca').description('The built-in certificate authority.');
  const root = ca
    .command('root')
    .description('Print the trust bundle (PEM) that workloads must trust; creates the root on first use.')
    .option('--data-dir <dir>', 'the data directory of the Portolan', SERVE_DEFAULTS.dataDir)
    .option('--trust-domain <domain>', 'SPIFFE trust domain', CA_DEFAULTS.trustDomain)
    .option('--ca-dir <dir>', "plug-in CA in Istio's cacerts layout (as given to serve)")
    .option('--ca-key-algorithm <alg>', 'key of a newly created root', CA_DEFAULTS.caKeyAlgorithm)
    .action((opts: CaFlags, cmd: Command) =>
      cliErrors(cmd, async () => {
        const options = compileCaServeOptions({ ...opts, secureXdsAddr: 'off' });
        if (!options) throw new OptionError('invalid CA options');
        await withCommandStore(opts, async ({ material }) => {
          const authority = await openCa(options, material);
          process.stdout.write(`${authority.trustBundle().trim()}\n`);
        });
      }),
    );
  addStoreFlag(root);
  const rotate = ca
    .command('rotate')
    .description(
      'Add a new root to the trust bundle now; it starts signing after --overlap, and the old root stays trusted until what it signed has expired.',
    )
    .option('--data-dir <dir>', 'the data directory of the Portolan', SERVE_DEFAULTS.dataDir)
    .option('--trust-domain <domain>', 'SPIFFE trust domain', CA_DEFAULTS.trustDomain)
    .option(
      '--overlap <duration>',
      'time for every workload to pick up the new bundle (≥ the longest certificate lifetime in use)',
      '24h',
    )
    .option(
      '--ca-max-ttl <duration>',
      'the --ca-max-ttl of serve: how long the old root stays trusted after the switch',
      CA_DEFAULTS.caMaxTtl,
    )
    .option('--ca-key-algorithm <alg>', 'key of the new root', CA_DEFAULTS.caKeyAlgorithm)
    .action((opts: CaFlags & { overlap: string; caMaxTtl: string }, cmd: Command) =>
      cliErrors(cmd, async () => {
        if (!(KEY_ALGORITHMS as readonly string[]).includes(opts.caKeyAlgorithm))
          throw new OptionError(`--ca-key-algorithm: one of ${KEY_ALGORITHMS.join(', ')}`);
        const overlapMs = parseDuration(opts.overlap, '--overlap');
        const maxTtlMs = parseDuration(opts.caMaxTtl, '--ca-max-ttl');
        await withCommandStore(opts, async ({ material }) => {
          const roots = new RootStore(material, process.env[PASSPHRASE_ENV] || undefined);
          const next = await roots.rotate(
            opts.trustDomain,
            opts.caKeyAlgorithm as KeyAlgorithm,
            overlapMs,
            maxTtlMs,
          );
          process.stderr.write(
            `new root added to the trust bundle; it signs from ${next.signingFrom}. Running servers pick it up within 30 s.\n`,
          );
        });
      }),
    );
  addStoreFlag(rotate);
}
