// `portolan cert`: what a VM runs to get and keep its workload certificate (see ca/workload-agent.ts).
import type { Command } from 'commander';
import { explainConnectionError } from '../ca/connection-errors.js';
import { parseDuration } from '../ca/duration.js';
import { obtainCertificate, runAgent, AgentError, type AgentOptions } from '../ca/workload-agent.js';
import { createLogger } from '../log/logger.js';
import { cliErrors } from './cli-errors.js';
import { OptionError } from '../adapters/option-values.js';

import { TOKEN_ENV } from './env-options.js';
export { TOKEN_ENV };

const REQUIRED = ['--ca-addr', '--root-cert', '--out'];

interface CertFlags {
  caAddr: string;
  rootCert: string;
  token?: string;
  out: string;
  once?: boolean;
  ttl?: string;
  logLevel: string;
}

export function addCertCommand(program: Command): void {
  program
    .command('cert')
    .description(
      'Get a workload certificate from the CA and keep it renewed (at 80% of its lifetime) in --out: cert-chain.pem, key.pem, root-cert.pem.',
    )
    // Required, but checked in the action: commander would demand them of `cert revoke` too.
    .option('--ca-addr <host:port>', "the CA's secure port (serve's --secure-xds-addr)")
    .option('--root-cert <file>', 'trust bundle for first contact, from `portolan ca root`')
    .option('--token <token>', `join token for the first certificate (or set ${TOKEN_ENV})`)
    .option('--out <dir>', 'directory for the certificate files')
    .option('--once', 'get one certificate and exit')
    .option('--ttl <duration>', "requested lifetime (default: the CA's)")
    .option('--log-level <level>', 'log level', 'info')
    .action((opts: CertFlags, cmd: Command) =>
      cliErrors(cmd, async () => {
        for (const option of cmd.options)
          if (
            REQUIRED.includes(option.long ?? '') &&
            cmd.getOptionValue(option.attributeName()) === undefined
          )
            cmd.error(`error: required option '${option.flags}' not specified`);
        const token = opts.token ?? process.env[TOKEN_ENV];
        const logger = createLogger(opts.logLevel as 'info');
        const options: AgentOptions = {
          caAddress: opts.caAddr,
          rootCertFile: opts.rootCert,
          outDir: opts.out,
          logger,
          ...(token && { token }),
          ...(opts.ttl && { ttlSeconds: Math.ceil(parseDuration(opts.ttl, '--ttl') / 1000) }),
        };
        if (opts.once) {
          try {
            await obtainCertificate(options);
          } catch (err) {
            if (err instanceof AgentError) throw new OptionError(err.message);
            const details = (err as { details?: string }).details;
            const why =
              details === undefined ? (err as Error).message : explainConnectionError(details, opts.caAddr);
            process.stderr.write(`error: certificate request failed: ${why}\n`);
            process.exitCode = 1;
          }
          return;
        }
        const abort = new AbortController();
        process.on('SIGINT', () => abort.abort());
        process.on('SIGTERM', () => abort.abort());
        await runAgent(options, abort.signal);
      }),
    );
}
