// The readable log format: level, component, the subject (file:line or node=ID) first, then the
// message and the other fields as key=value, one line per event.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { pino, type Logger } from 'pino';
import { prettyStream } from '../../../log/logger.js';

function capture(): { logger: Logger; lines: () => string[] } {
  const out = new PassThrough();
  let text = '';
  out.on('data', (c: Buffer) => (text += c.toString('utf8')));
  const logger = pino(
    { level: 'debug', base: { pid: 1 } },
    prettyStream({ destination: out, colorize: false }),
  );
  return { logger, lines: () => text.split('\n').filter(Boolean) };
}

test('a line about a file starts with file:line, then the message', () => {
  const { logger, lines } = capture();
  logger
    .child({ component: 'config-dir' })
    .warn({ file: 'traffic/split.yaml', line: 7 }, 'weights must sum to 100');
  assert.deepEqual(lines(), [lines()[0]]);
  assert.match(
    lines()[0] ?? '',
    /^\[\d\d:\d\d:\d\d\.\d{3}\] WARN: config-dir +traffic\/split\.yaml:7  weights must sum to 100$/,
  );
});

test('a config issue worded with its own file:line is not said twice', () => {
  const { logger, lines } = capture();
  logger.warn({ file: 'a.yaml', line: 3 }, 'a.yaml:3 spec.hosts: required');
  assert.match(lines()[0] ?? '', /WARN: a\.yaml:3  spec\.hosts: required$/);
});

test('a line about a proxy names it first; other fields follow as key=value', () => {
  const { logger, lines } = capture();
  logger
    .child({ component: 'ads' })
    .warn(
      { conn: 'conn-3', node: 'echo-1', type: 'CDS', error: 'bad lb policy' },
      'client rejected config (NACK)',
    );
  assert.match(
    lines()[0] ?? '',
    /WARN: ads +node=echo-1  client rejected config \(NACK\)  conn=conn-3  type=CDS  error="bad lb policy"$/,
  );
});

test('colours are used when asked: the level is coloured', () => {
  const out = new PassThrough();
  let text = '';
  out.on('data', (c: Buffer) => (text += c.toString('utf8')));
  pino({ base: {} }, prettyStream({ destination: out, colorize: true })).error('boom');
  assert.match(text, /\u001b\[31mERROR\u001b\[39m/);
});
