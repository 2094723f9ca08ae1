#!/usr/bin/env -S node --no-memory-reducer --min-semi-space-size=8 --heap-growing-percent=100 --expose-gc
// The `portolan` command line. Each command's definition is loaded only when it runs (cli/commands.ts).
import { Command } from 'commander';
import { addCommands, commandsFor } from './commands.js';
import { addEnvOptions, TOKEN_ENV } from './env-options.js';
import { STORE_URL_ENV } from './store-flags.js';
import { oneLineErrors } from './usage-errors.js';

const program = new Command()
  .name('portolan')
  .description(
    'An xDS control plane for VMs and bare metal: Envoy and proxyless gRPC, fed by Consul, ZooKeeper, Kubernetes and YAML.',
  );
await addCommands(program, commandsFor(process.argv.slice(2)));

// Every serve and agent flag is also a PORTOLAN_* variable (an EnvironmentFile is the whole config).
const serve = program.commands.find((c) => c.name() === 'serve');
if (serve) addEnvOptions(serve, { aliases: { '--store': STORE_URL_ENV } });
const agent = program.commands.find((c) => c.name() === 'agent');
if (agent) addEnvOptions(agent, { aliases: { '--token': TOKEN_ENV } });
oneLineErrors(program);

await program.parseAsync(process.argv);
