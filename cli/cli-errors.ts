// A subcommand's bad input (a flag value, an unreadable store, a bad token or identity) is exit code
// 2 and one line naming it; anything else is a bug and keeps its stack.
import type { Command } from 'commander';
import { OptionError } from '../adapters/option-values.js';
import { DurationError } from '../ca/duration.js';
import { IdentityError } from '../ca/identity.js';
import { TokenError } from '../ca/join-tokens.js';
import { StoreError } from '../store/store.js';

/** Runs a subcommand body; bad input is exit code 2 with the reason. */
export function cliErrors(command: Command, fn: () => void | Promise<void>): Promise<void> {
  const fail = (err: unknown): never => {
    if (
      err instanceof OptionError ||
      err instanceof StoreError ||
      err instanceof TokenError ||
      err instanceof IdentityError ||
      err instanceof DurationError
    )
      command.error(`error: ${err.message}`, { exitCode: 2 });
    throw err;
  };
  try {
    return Promise.resolve(fn()).catch(fail);
  } catch (err) {
    return fail(err);
  }
}
