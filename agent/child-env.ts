// The environment the agent gives the processes it starts (the supervised command, exec probes):
// its own, less the secrets it reads. The join token (PORTOLAN_JOIN_TOKEN) enrolls a workload
// identity; a child that inherited it could spend it (on a token of several uses) or leak it.
// Any PORTOLAN_* variable naming a token, secret, password or key is left out the same way, so a
// flag given through the environment (PORTOLAN_AGENT_TOKEN, say) is covered too.
const SECRET = /^PORTOLAN_.*(TOKEN|SECRET|PASSWORD|PASSWD|KEY)/i;

/** Whether the agent keeps `name` from its children. */
export function isSecretEnv(name: string): boolean {
  return SECRET.test(name);
}

/** `env` without the agent's secrets. */
export function childEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) if (!isSecretEnv(name)) out[name] = value;
  return out;
}
