// One way to run a gRPC server's listener, shared by the secure port (TLS from a certificate
// provider, secure-server.ts) and the agent's local servers (plaintext on Unix sockets: the agent's
// xDS proxy and SDS): bind on an address and report it with the port actually bound, and stop
// gracefully within a deadline, then by force. Written once so the three cannot drift (a listener
// that never stops because one stream hangs, an address reported with port 0).
import * as grpc from '@grpc/grpc-js';

/** TLS whose certificates come from `provider` and are replaced in place (client certificates optional). */
export function tlsCredentials(provider: grpc.experimental.CertificateProvider): grpc.ServerCredentials {
  // grpc-js names the first parameter the CA provider but uses it as the identity provider; one
  // object serving both sidesteps the mix-up. false: a client certificate is optional at the TLS
  // layer (a VM's first contact has only a join token); the services decide what they require.
  return grpc.experimental.createCertificateProviderServerCredentials(provider, provider, false);
}

/** No TLS: for Unix sockets, whose file permissions say who may connect. */
export function plaintextCredentials(): grpc.ServerCredentials {
  return grpc.ServerCredentials.createInsecure();
}

/**
 * Binds `server` on `address` (`host:port`, `[v6]:port`, or `unix:/path`) and returns the address
 * as bound: port 0 replaced by the port the system chose, a Unix address as given.
 */
export function listenGrpc(
  server: grpc.Server,
  address: string,
  credentials: grpc.ServerCredentials,
): Promise<string> {
  return new Promise((resolve, reject) =>
    server.bindAsync(address, credentials, (err, port) => {
      if (err) reject(new Error(`cannot listen on ${address}: ${err.message}`, { cause: err }));
      else resolve(address.startsWith('unix:') ? address : address.replace(/:\d+$/, `:${port}`));
    }),
  );
}

/** Lets open calls finish for up to `graceMs`, then closes what is left. */
export function stopGrpc(server: grpc.Server, graceMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
