// What a file-based registry (the config directory) remembers beyond this process: the last accepted
// version of each file, and a record of every accept, reject and removal. The store implements it;
// `portolan serve` hands it to the registries through their factory context.

export interface ConfigHistory {
  lastAcceptedText(path: string): string | undefined;
  recordConfig(
    path: string,
    outcome: 'accepted' | 'rejected' | 'removed',
    details: { text?: string; resources?: readonly string[]; error?: string },
  ): void;
}
