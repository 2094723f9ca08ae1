// Every flag of `portolan serve` and `portolan agent` is also an environment variable,
// PORTOLAN_<FLAG_IN_UPPER_SNAKE> (--ca-addr: PORTOLAN_CA_ADDR), so a systemd EnvironmentFile plus the
// unit is the whole configuration (issue #48, docs/install.md). Applied to the finished commander
// commands at the assembly point, so every flag a command has, now or later, gets its variable.
//
// Flags that take a value use commander's own Option.env() (the help shows the variable, commander
// reads it after the command line and before the required-flag check): the value goes through the
// flag's checks (choices, parsers), a flag on the command line wins, and a required flag may come
// from the environment. Commander listens for the variable only on options that had it when they
// were added, so the listener is added here too. Commander treats a boolean flag's variable as set by its mere presence
// (PORTOLAN_RESET_STORE=false would reset the store), so booleans are read here instead, strictly
// true/false, before the action runs. The variable is the flag as written: --no-dns is
// PORTOLAN_NO_DNS=true. A PORTOLAN_* variable the command does not know is warned about.
import { InvalidArgumentError, type Command, type Option } from 'commander';

const PREFIX = 'PORTOLAN_';

/** The join token's variable (cert, agent): it predates the PORTOLAN_<FLAG> rule, so --token's alias. */
export const TOKEN_ENV = 'PORTOLAN_JOIN_TOKEN';

/** PORTOLAN_ variables that are no flag's, read by the code directly (or by tests and benchmarks). */
export const NON_FLAG_VARIABLES: readonly string[] = [
  'PORTOLAN_CA_KEY_PASSPHRASE',
  'PORTOLAN_VALIDATE_PUSHES',
  'PORTOLAN_BENCH_NODE_ARGS',
  'PORTOLAN_BENCH_PROFILE',
];

export interface EnvOptionsSettings {
  /** Flags whose variable predates the rule, by long flag: `{ '--token': 'PORTOLAN_JOIN_TOKEN' }`. */
  readonly aliases?: Readonly<Record<string, string>>;
  /** Where warnings go (stderr by default). */
  readonly warn?: (line: string) => void;
}

/** `--ca-addr` → `PORTOLAN_CA_ADDR`. */
export function envVariableName(longFlag: string): string {
  return PREFIX + longFlag.replace(/^--/, '').replace(/-/g, '_').toUpperCase();
}

/** The variable of each of a command's flags (help and --version excepted). */
export function envVariables(
  command: Command,
  aliases: Readonly<Record<string, string>> = {},
): Map<Option, string> {
  const out = new Map<Option, string>();
  for (const option of command.options) {
    if (!option.long || option.long === '--help' || option.long === '--version') continue;
    out.set(option, aliases[option.long] ?? envVariableName(option.long));
  }
  return out;
}

/** Gives every flag of `command` its environment variable (see the top of this file). */
export function addEnvOptions(command: Command, settings: EnvOptionsSettings = {}): void {
  const variables = envVariables(command, settings.aliases);
  const booleans: [Option, string][] = [];
  for (const [option, name] of variables) {
    if (option.required || option.optional) {
      option.env(name);
      command.on(`optionEnv:${option.name()}`, (text: string) => takeValue(command, option, name, text));
    } else {
      booleans.push([option, name]);
      option.description = `${option.description} (env: ${name}=true)`;
    }
  }
  const known = new Set([...variables.values(), ...NON_FLAG_VARIABLES]);
  const warn = settings.warn ?? ((line: string) => process.stderr.write(`${line}\n`));
  const warnUnknown = (): void => {
    for (const name of Object.keys(process.env).sort()) {
      if (!name.startsWith(PREFIX) || known.has(name)) continue;
      const near = nearest(name, [...variables.values()]);
      warn(
        `warning: ${name} is not a setting of \`portolan ${command.name()}\`; ignored` +
          (near ? ` (did you mean ${near}?)` : ''),
      );
    }
  };
  // Warned before the command's own parse, so a misspelt variable is named even when the required
  // flag it meant to give is then reported missing.
  if (command.parent)
    command.parent.hook('preSubcommand', (_parent, sub) => {
      if (sub === command) warnUnknown();
    });
  command.hook('preAction', (_self, action) => {
    if (action !== command) return;
    if (!command.parent) warnUnknown();
    const env = process.env;
    for (const [option, name] of booleans) {
      const text = env[name];
      if (text === undefined) continue;
      const key = option.attributeName();
      if (command.getOptionValueSource(key) === 'cli') continue;
      const value = parseBoolean(text);
      if (value === undefined)
        command.error(`error: ${name}: expected true or false, got "${text}"`, { exitCode: 2 });
      // true: as if the flag were given; false: as if it were not.
      if (value) command.setOptionValueWithSource(key, !option.negate, 'env');
    }
  });
}

/** As commander does for a value from the command line, with 'env' as its source. */
function takeValue(command: Command, option: Option, name: string, text: string): void {
  const key = option.attributeName();
  let value: unknown = text;
  if (option.parseArg) {
    try {
      value = option.parseArg(text, command.getOptionValue(key));
    } catch (err) {
      if (!(err instanceof InvalidArgumentError)) throw err;
      command.error(
        `error: option '${option.flags}' value '${text}' from env '${name}' is invalid. ${err.message}`,
        {
          exitCode: err.exitCode,
          code: err.code,
        },
      );
    }
  }
  command.setOptionValueWithSource(key, value, 'env');
}

function parseBoolean(text: string): boolean | undefined {
  const t = text.trim().toLowerCase();
  return t === 'true' ? true : t === 'false' ? false : undefined;
}

/** The known name closest to a misspelt one, if it is close (a few edits, or --no- forgotten). */
function nearest(name: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 4;
  for (const candidate of candidates) {
    const d = candidate === name.replace(PREFIX, `${PREFIX}NO_`) ? 0 : editDistance(name, candidate);
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row[j] = Math.min(
        (previous[j] ?? 0) + 1,
        (row[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    previous = row;
  }
  return previous[b.length] ?? 0;
}
