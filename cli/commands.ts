// Every `portolan` command, in the order help lists them, each with where its definition lives.
// Definitions are loaded on demand: a run loads the one command it names (help, or a name that is
// no command's, loads them all), so `portolan wait` or `portolan version` does not first load the
// server, the CA and the database drivers (0.6–1.2 s of start-up before this).
import type { Command } from 'commander';

type AddCommand = (program: Command) => void;

export interface CommandEntry {
  /** The first word on the command line. */
  readonly name: string;
  readonly load: () => Promise<readonly AddCommand[]>;
}

export const COMMANDS: readonly CommandEntry[] = [
  { name: 'serve', load: async () => [(await import('./serve-command.js')).addServeCommand] },
  { name: 'history', load: async () => [(await import('./status-commands.js')).addHistoryCommand] },
  { name: 'proxy-status', load: async () => [(await import('./status-commands.js')).addProxyStatusCommand] },
  { name: 'proxy-config', load: async () => [(await import('./status-commands.js')).addProxyConfigCommand] },
  { name: 'diff', load: async () => [(await import('./diff.js')).addDiffCommand] },
  { name: 'bootstrap', load: async () => [(await import('./bootstrap.js')).addBootstrapCommand] },
  { name: 'wait', load: async () => [(await import('./wait.js')).addWaitCommand] },
  { name: 'version', load: async () => [(await import('./version.js')).addVersionCommand] },
  { name: 'token', load: async () => [(await import('./token.js')).addTokenCommand] },
  { name: 'ca', load: async () => [(await import('./ca.js')).addCaCommand] },
  {
    name: 'cert',
    load: async () => {
      const [cert, revoke] = await Promise.all([import('./cert.js'), import('./cert-revoke.js')]);
      return [cert.addCertCommand, revoke.addCertRevokeCommand];
    },
  },
  { name: 'agent', load: async () => [(await import('./agent.js')).addAgentCommand] },
  { name: 'vm', load: async () => [(await import('./vm-bundle.js')).addVmCommand] },
];

/** The commands a run with these arguments (after `node main.js`) needs defined. */
export function commandsFor(args: readonly string[]): readonly CommandEntry[] {
  const named = COMMANDS.find((c) => c.name === args[0]);
  return named ? [named] : COMMANDS;
}

/** Defines `entries` on the program, in order. */
export async function addCommands(program: Command, entries: readonly CommandEntry[]): Promise<void> {
  const adders = await Promise.all(entries.map((e) => e.load()));
  for (const list of adders) for (const add of list) add(program);
}
