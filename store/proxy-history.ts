// Which proxies connected, from where, when, and the last ACK/NACK of each type. Bounded like the
// other history tables.
import type Database from 'better-sqlite3';
import { prepared } from './prepared.js';
import { Retention } from './retention.js';
import type { GuardWrite } from './snapshots.js';

export interface ProxyConnectionRecord {
  readonly nodeId: string;
  readonly peer: string;
  readonly kind: string;
  readonly connectedAt: string;
  readonly disconnectedAt: string | null;
  readonly lastAcks: Record<string, unknown>;
  readonly lastNacks: Record<string, unknown>;
}

interface Row {
  node_id: string;
  peer: string;
  kind: string;
  connected_at: string;
  disconnected_at: string | null;
  last_acks: string;
  last_nacks: string;
}

/**
 * What one row may hold of what a client sent (node id, peer, kind; the last ACK/NACK per type as
 * JSON), whatever the caller passes: the ADS server bounds them at receipt, this bounds the disk.
 */
export const PROXY_ROW_LIMITS = { textChars: 1024, jsonChars: 64 * 1024 } as const;

const boundedText = (s: string): string =>
  s.length <= PROXY_ROW_LIMITS.textChars ? s : `${s.slice(0, PROXY_ROW_LIMITS.textChars)}…`;

/** The JSON of `value`, or, over the bound, a stand-in saying so (still JSON: recent() parses it). */
function boundedJson(value: Record<string, unknown>): string {
  const json = JSON.stringify(value);
  return json.length <= PROXY_ROW_LIMITS.jsonChars
    ? json
    : JSON.stringify({ truncated: `${json.length} characters, over ${PROXY_ROW_LIMITS.jsonChars}` });
}

export class ProxyHistoryTable {
  private readonly retention: Retention;

  constructor(
    private readonly db: Database.Database,
    private readonly guard: GuardWrite,
    limit: number,
  ) {
    this.retention = new Retention(db, ['proxy_connections'], limit);
  }

  /** Records a new connection that started `at` (default now); returns its row id for the disconnect. */
  connected(nodeId: string, peer: string, kind: string, at = new Date().toISOString()): number | undefined {
    return this.guard(`proxy connection of ${nodeId}`, () => {
      // A connect storm writes a row per stream: prepared once (prepared.ts).
      const info = prepared<[string, string, string, string]>(
        this.db,
        'INSERT INTO proxy_connections (node_id, peer, kind, connected_at) VALUES (?, ?, ?, ?)',
      ).run(boundedText(nodeId), boundedText(peer), boundedText(kind), at);
      this.retention.inserted();
      return Number(info.lastInsertRowid);
    });
  }

  /** Runs `fn` (several connects and disconnects) as one transaction: one commit, one fsync. */
  batch(fn: () => void): void {
    this.guard('proxy connection batch', () => this.db.transaction(fn)());
  }

  disconnected(
    id: number,
    lastAcks: Record<string, unknown>,
    lastNacks: Record<string, unknown>,
    at = new Date().toISOString(),
  ): void {
    this.guard('proxy disconnect', () => {
      prepared<[string, string, string, number]>(
        this.db,
        'UPDATE proxy_connections SET disconnected_at = ?, last_acks = ?, last_nacks = ? WHERE id = ?',
      ).run(at, boundedJson(lastAcks), boundedJson(lastNacks), id);
    });
  }

  recent(limit = 100): ProxyConnectionRecord[] {
    return this.db
      .prepare<[number], Row>('SELECT * FROM proxy_connections ORDER BY id DESC LIMIT ?')
      .all(limit)
      .map((r) => ({
        nodeId: r.node_id,
        peer: r.peer,
        kind: r.kind,
        connectedAt: r.connected_at,
        disconnectedAt: r.disconnected_at,
        lastAcks: JSON.parse(r.last_acks) as Record<string, unknown>,
        lastNacks: JSON.parse(r.last_nacks) as Record<string, unknown>,
      }));
  }
}
