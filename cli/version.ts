// `portolan version`: Portolan's version and the runtime it runs on, which for the packages
// (docs/install.md) is the Node.js binary they carry, not the machine's.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';

export function versionLine(version: string): string {
  return `portolan ${version} (Node.js ${process.version} at ${process.execPath}, ${process.platform}-${process.arch})`;
}

export function addVersionCommand(program: Command): void {
  program
    .command('version')
    .description('Print the Portolan version and its runtime (the Node.js it runs on).')
    .action(() => {
      const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
        version: string;
      };
      process.stdout.write(`${versionLine(pkg.version)}\n`);
    });
}
