// Package interop gives the interop tests (our recipes beside Apache
// Curator's, ZooKeeper's own recipes and kazoo's) the servers to run one
// scenario against: a real ZooKeeper 3.8 server started by
// zkadapter/zkserver, and fakezk served on the wire (fakezk/wire) in the
// test's own process, on the real clock. The same scenario body runs on
// both, so a peer that works against the real server and fails against
// the fake shows a difference of the fake's, and the other way round.
//
//	interop.Run(t, zkserver.Options{}, func(t *testing.T, srv interop.Server) {
//		... // dial srv.Addrs(), run the peer against srv.Addrs()[0]
//	})
//
// Run runs the scenario as the subtests "real" and "fakezk". The real one
// is skipped without java and the jars, as zkserver.Standalone is (failed
// with ZK_REQUIRED=1); the fake one needs nothing. Each server is the
// subtest's own and stops when it ends.
//
// Options map onto the fake as follows: MaxSessionTimeout sets its tick
// (a twentieth of it, as ZooKeeper negotiates timeouts into [2, 20]
// ticks; 100ms by default, as zkserver's), so the fake's minimum timeout
// is a tenth of that maximum where the real server's stays 200ms; Proxied
// puts an internal/netproxy proxy in front of it, so that Partition and Heal act
// on both kinds alike. The other options (TLS, ensembles, ...) are the
// real server's only.
package interop
