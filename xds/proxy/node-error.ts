// A node whose id or metadata cannot be understood: its stream is refused with INVALID_ARGUMENT.
export class NodeError extends Error {}
