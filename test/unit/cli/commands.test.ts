// The dispatch table in cli/commands.ts: a run defines only the command it names, so each entry
// must define exactly the command it is named for, and every other word gets them all (help,
// suggestions for a misspelling).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Command } from 'commander';
import { addCommands, COMMANDS, commandsFor } from '../../../cli/commands.js';

test('each entry defines the one command it is named for', async () => {
  for (const entry of COMMANDS) {
    const program = new Command();
    await addCommands(program, [entry]);
    assert.deepEqual(
      program.commands.map((c) => c.name()),
      [entry.name],
      entry.name,
    );
  }
});

test('a run naming a command loads that one; anything else loads them all, in help order', () => {
  assert.deepEqual(
    commandsFor(['wait', '--timeout', '3s']).map((c) => c.name),
    ['wait'],
  );
  assert.deepEqual(
    commandsFor(['cert', 'revoke']).map((c) => c.name),
    ['cert'],
  );
  for (const args of [[], ['--help'], ['help', 'serve'], ['serv']]) assert.equal(commandsFor(args), COMMANDS);
});

test('all of them together are the commands help lists', async () => {
  const program = new Command();
  await addCommands(program, COMMANDS);
  assert.deepEqual(
    program.commands.map((c) => c.name()),
    [
      'serve',
      'history',
      'proxy-status',
      'proxy-config',
      'diff',
      'bootstrap',
      'wait',
      'version',
      'token',
      'ca',
      'cert',
      'agent',
      'vm',
    ],
  );
  const cert = program.commands.find((c) => c.name() === 'cert');
  assert.ok(cert?.commands.some((c) => c.name() === 'revoke'));
});
