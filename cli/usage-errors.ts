// A command-line error is one line and a pointer to the help, not the whole help (70–80 lines that
// push the reason off the screen): "error: …" then "(see `portolan serve --help`)". Set on every
// command once they are all registered, since commander copies the setting only at creation.
import type { Command } from 'commander';

/** `portolan token create` for the token create command. */
export function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** After every error of `program` and its subcommands, the hint where help is, not the help. */
export function oneLineErrors(program: Command): void {
  const visit = (command: Command): void => {
    command.showHelpAfterError(`(see \`${commandPath(command)} --help\`)`);
    for (const sub of command.commands) visit(sub);
  };
  visit(program);
}
