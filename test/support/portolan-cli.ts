// Runs the built `portolan` CLI (dist/cli/main.js) as a child process, bounded at 20 s: what the
// e2e tests call for one-shot commands (`ca root`, `token create`, …) beside a running serve.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const PORTOLAN_MAIN = fileURLToPath(new URL('../../cli/main.js', import.meta.url));
const run = promisify(execFile);

/** The command's stdout; rejects (with its stderr) when it exits non-zero or runs over 20 s. */
export async function portolanCli(args: readonly string[]): Promise<string> {
  return (await run(process.execPath, [PORTOLAN_MAIN, ...args], { timeout: 20_000 })).stdout;
}
