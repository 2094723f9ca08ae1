// Structured logging with pino. Two formats of the same events: JSON lines (for machines: the default
// when stderr is not a terminal) and one readable line per event (for people: on a terminal, or
// `--log-format pretty`), with level colours, the component, then the subject of the line — the file
// and line (`file:line`) or the proxy (`node=ID`) — then the message and the other fields as key=value.
// Components take a child logger with `component` set; a line about a proxy carries `node`, a line
// about a config file `file` (and `line` when it is about a place in it).
import { pino, type LevelWithSilent, type Logger } from 'pino';
import pretty from 'pino-pretty';
import { stderrLines } from './stderr-lines.js';

export type { Logger } from 'pino';

/** `auto`: pretty when stderr is a terminal, else JSON. */
export type LogFormat = 'json' | 'pretty' | 'auto';

export const LOG_FORMATS: readonly LogFormat[] = ['auto', 'json', 'pretty'];

export function createLogger(level: LevelWithSilent = 'info', format: LogFormat = 'json'): Logger {
  const usePretty = format === 'pretty' || (format === 'auto' && process.stderr.isTTY === true);
  if (!usePretty) {
    const { stream, hooks } = stderrLines();
    return pino({ level, base: { pid: process.pid }, hooks }, stream);
  }
  return pino({ level, base: { pid: process.pid } }, prettyStream());
}

/** The readable format, written synchronously to stderr (colours when the terminal takes them). */
export function prettyStream(
  options: { destination?: number | NodeJS.WritableStream; colorize?: boolean } = {},
): pretty.PrettyStream {
  return pretty({
    destination: options.destination ?? 2,
    sync: true,
    ...(options.colorize !== undefined && { colorize: options.colorize }),
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
    hideObject: true, // the fields are rendered by formatLine as key=value (errors are still printed)
    singleLine: true,
    messageFormat: formatLine,
  });
}

// Shown in the line's head, or not at all.
const HEAD_KEYS = new Set([
  'component',
  'file',
  'line',
  'node',
  'msg',
  'level',
  'time',
  'pid',
  'hostname',
  'err',
]);

/** `component  file:line  node=ID  message  key=value …` */
export const formatLine: pretty.MessageFormatFunc = (log, messageKey, _levelLabel, { colors }) => {
  const parts: string[] = [];
  if (typeof log.component === 'string') parts.push(colors.cyan(log.component.padEnd(10)));
  let message = fieldText(log[messageKey]);
  if (typeof log.file === 'string') {
    const line = typeof log.line === 'number' && log.line > 0 ? `:${log.line}` : '';
    const where = `${log.file}${line}`;
    parts.push(colors.bold(where));
    // Config issues are worded "file:line path: message" for the JSON log; the head says it already.
    if (message.startsWith(`${where} `)) message = message.slice(where.length + 1);
  }
  if (typeof log.node === 'string') parts.push(colors.bold(`node=${log.node}`));
  parts.push(message);
  const fields = Object.entries(log)
    .filter(([k, v]) => !HEAD_KEYS.has(k) && k !== messageKey && v !== undefined)
    .map(([k, v]) => colors.gray(`${k}=${fieldValue(v)}`));
  if (log.err && typeof log.err === 'object' && 'message' in log.err)
    fields.unshift(colors.red(`err=${fieldValue(log.err.message)}`));
  return [...parts, ...fields].join('  ');
};

function fieldText(v: unknown): string {
  if (v === undefined || v === null) return '';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

function fieldValue(v: unknown): string {
  if (typeof v === 'string') return /[\s"=]/.test(v) || v === '' ? JSON.stringify(v) : v;
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  return JSON.stringify(v);
}

/** For tests and library use: discards everything. */
export const silentLogger: Logger = pino({ level: 'silent' });
