// `portolan token create|revoke|list`: join tokens in the store of a (running or not) Portolan.
// `create` prints only the token on stdout, so it can be captured: TOKEN=$(portolan token create …).
import type { Command } from 'commander';
import { parseDuration } from '../ca/duration.js';
import { workloadIdentity } from '../ca/identity.js';
import { createSharedJoinToken, joinTokenState, tokenId, TokenError } from '../ca/join-tokens.js';
import { CA_DEFAULTS } from './ca-options.js';
import { parsePositiveInt } from '../adapters/option-values.js';
import { SERVE_DEFAULTS } from './serve-defaults.js';
import { formatTable } from './table.js';
import { STORE_FLAG_HELP, withCommandStore } from './store-options.js';
import { cliErrors } from './cli-errors.js';

export { cliErrors };

export function addTokenCommand(program: Command): void {
  const token = program.command('token').description('Join tokens: a VM’s first authentication to the CA.');
  token
    .command('create')
    .description('Create a join token for one workload identity; prints only the token.')
    .requiredOption('--namespace <ns>', 'namespace of the identity')
    .requiredOption('--service-account <sa>', 'service account of the identity')
    .option('--ttl <duration>', 'how long the token is valid', '1h')
    .option('--uses <n>', 'how many certificates it may obtain', '1')
    .option('--trust-domain <domain>', 'SPIFFE trust domain (as given to serve)', CA_DEFAULTS.trustDomain)
    .option('--data-dir <dir>', 'the data directory of the Portolan', SERVE_DEFAULTS.dataDir)
    .option('--store <url>', STORE_FLAG_HELP)
    .action(
      (
        opts: {
          namespace: string;
          serviceAccount: string;
          ttl: string;
          uses: string;
          trustDomain: string;
          dataDir: string;
          store?: string;
        },
        cmd: Command,
      ) =>
        cliErrors(cmd, async () => {
          const identity = workloadIdentity(opts.trustDomain, opts.namespace, opts.serviceAccount);
          const ttlMs = parseDuration(opts.ttl, '--ttl');
          const uses = parsePositiveInt(opts.uses, '--uses');
          await withCommandStore(opts, async ({ shared }) => {
            const created = await createSharedJoinToken(shared, identity, ttlMs, uses);
            process.stdout.write(`${created.token}\n`);
            process.stderr.write(
              `token ${created.id} for ${identity}, ${uses} use(s), expires ${created.expiresAt.toISOString()}\n`,
            );
          });
        }),
    );
  token
    .command('revoke <token-or-id>')
    .description(
      'Revoke a join token (by its id or the whole token) and every enrollment it started: their certificates are refused at renewal and their secure streams closed within seconds.',
    )
    .option('--data-dir <dir>', 'the data directory of the Portolan', SERVE_DEFAULTS.dataDir)
    .option('--store <url>', STORE_FLAG_HELP)
    .action((value: string, opts: { dataDir: string; store?: string }, cmd: Command) =>
      cliErrors(cmd, () =>
        withCommandStore(opts, async ({ shared }) => {
          const id = tokenId(value);
          const outcome = await shared.revokeJoinToken(id, new Date());
          if (outcome.tokens + outcome.enrollments === 0) throw new TokenError(`no live token with id ${id}`);
          process.stderr.write(
            `token ${id} revoked; ${outcome.enrollments} enrollment(s) started with it revoked ` +
              `(${await shared.countEnrollmentsByToken(id)} in all): a running serve closes their secure streams within seconds\n`,
          );
        }),
      ),
    );
  token
    .command('list')
    .description('List join tokens (ids, identities, expiry, uses left; never the tokens).')
    .option('--data-dir <dir>', 'the data directory of the Portolan', SERVE_DEFAULTS.dataDir)
    .option('--store <url>', STORE_FLAG_HELP)
    .action((opts: { dataDir: string; store?: string }, cmd: Command) =>
      cliErrors(cmd, () =>
        withCommandStore(opts, async ({ shared }) => {
          const now = new Date();
          const rows = (await shared.listJoinTokens()).map((t) => [
            t.id,
            joinTokenState(t, now),
            String(t.usesLeft),
            t.expiresAt,
            t.identity,
          ]);
          if (rows.length === 0) process.stderr.write('no join tokens\n');
          else
            process.stdout.write(
              formatTable(['ID', 'STATE', 'USES LEFT', 'EXPIRES', 'IDENTITY'], rows, { maxCell: 200 }),
            );
        }),
      ),
    );
}
