// The two messages between the control plane and `portolan agent` that Envoy's protos do not have,
// added to the same proto root: Istio's NDS name table (the agent's DNS proxy answers from it), and
// what an auto-registered agent is told about its WorkloadGroup (the probe to run).
export const AGENT_PROTO = `
syntax = "proto3";
package istio.networking.nds.v1;
// Istio's istio.networking.nds.v1.NameTable, field for field.
message NameTable {
  message NameInfo {
    repeated string ips = 1;
    string registry = 2;
    string shortname = 3;
    string namespace = 4;
    repeated string alt_hosts = 5;
  }
  map<string, NameInfo> table = 1;
}
`;

export const REGISTRATION_PROTO = `
syntax = "proto3";
package portolan.agent.v1;
message WorkloadRegistration {
  // NAMESPACE/GROUP.
  string name = 1;
  // The group's readiness probe (mesh/types.ts ReadinessProbe) as JSON; empty: no probe.
  string probe_json = 2;
}
`;
