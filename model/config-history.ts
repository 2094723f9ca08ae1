// What a file-based registry (the config directory) remembers beyond this process: the last accepted
// version of each file, and a record of every accept, reject and removal. The store implements it;
// `portolan serve` hands it to the registries through their factory context.

export interface ConfigHistory {
  lastAcceptedText(path: string): string | undefined;
  recordConfig(
    path: string,
    outcome: 'accepted' | 'rejected' | 'removed',
    details: {
      text?: string;
      resources?: readonly string[];
      error?: string;
      /** The config generation of the publication this row's file step made. */
      generation?: number;
    },
  ): void;
  /** The highest config generation recorded (0: none): a restart numbers on from it. */
  lastGeneration?(): number;
  /** Records that `generation` was published, so no later run uses it again. */
  recordGeneration?(generation: number): void;
}
