// @grpc/grpc-js-xds 1.14 registers its RBAC HTTP filter (gRFC A41) only when
// GRPC_XDS_EXPERIMENTAL_RBAC=true, read once when the package loads. A test file imports this module
// first (before anything that loads the package), so its XdsServers enforce the RBAC filters
// Portolan sends instead of refusing the listener.
process.env.GRPC_XDS_EXPERIMENTAL_RBAC = 'true';
