// Config generation ids: each publication of the config directory gets the next one, an integer that
// only grows and is never used twice, restored from the store across restarts. `portolan wait` asks
// for the generation in force after a sync (POST /debug/config_sync) and waits for the streams that
// generation changed something for (GET /debug/waitz); pushes, responses, NACKs and history rows
// carry it, so a NACK, a push and the file versions it came from can be tied together.
import type { ConfigHistory } from '../model/config-history.js';

export class ConfigGenerations {
  private last: number;

  constructor(private readonly history: ConfigHistory | undefined) {
    this.last = history?.lastGeneration?.() ?? 0;
  }

  /** The generation of the last publication (0 before any). */
  get current(): number {
    return this.last;
  }

  /** The id of the publication being made now; recorded, so a restart numbers past it. */
  next(): number {
    this.last += 1;
    this.history?.recordGeneration?.(this.last);
    return this.last;
  }

  /**
   * `history` with each row tagged with the generation its file step will publish: rows are
   * recorded as the step reads and settles its files, just before it publishes.
   */
  tagging(history: ConfigHistory | undefined): ConfigHistory | undefined {
    if (!history) return undefined;
    return {
      lastAcceptedText: (path) => history.lastAcceptedText(path),
      recordConfig: (path, outcome, details) =>
        history.recordConfig(path, outcome, { ...details, generation: this.last + 1 }),
    };
  }
}
