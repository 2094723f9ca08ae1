// Structured logging (pino, JSON lines on stderr). Components take a child logger with `component` set.
import { destination, pino, type LevelWithSilent, type Logger } from 'pino';

export type { Logger } from 'pino';

export function createLogger(level: LevelWithSilent = 'info'): Logger {
  return pino({ level, base: { pid: process.pid } }, destination({ fd: 2, sync: true }));
}

/** For tests and library use: discards everything. */
export const silentLogger: Logger = pino({ level: 'silent' });
