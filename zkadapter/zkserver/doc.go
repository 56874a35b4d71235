// Package zkserver runs real Apache ZooKeeper servers for tests of
// coordination code: a standalone server or an ensemble of n, started
// from the installed jars, with faults a test applies to one server at a
// time (kill, stop, restart, wipe, partition from its clients). It is what
// Apache Curator's TestingServer and TestingCluster are to Java: for the
// tests that must run against the real thing, beside fakezk (deterministic,
// simulated clock) for unit tests and fakezk/sim for fault exploration.
//
// What it guarantees:
//
//   - Loopback only: every server, and every proxy, listens on 127.0.0.1
//     on ports the system chose, so tests run in parallel and never touch
//     a server of the machine's (nor port 2181).
//   - Nothing outlives the test: Standalone and Ensemble register
//     t.Cleanup, which closes the proxies (waiting for their goroutines),
//     kills every JVM and waits for it to exit, and removes the data
//     directories; a test that checks for leaked goroutines (goleak)
//     passes, once its own clients are closed. The JVMs are also killed if
//     the test binary dies (the parent-death signal).
//   - Skip or fail, never a mystery: when java or the jars are missing the
//     test is skipped with a message saying how to install them (on Debian
//     or Ubuntu, `apt-get install default-jdk-headless zookeeper`; in
//     zkflow's own tree, `make test`, which runs .ci/install-deps); with
//     ZK_REQUIRED=1 in the environment it fails instead, so CI cannot pass
//     by skipping.
//
// A test:
//
//	func TestFailover(t *testing.T) {
//		zk := zkserver.Ensemble(t, 3, zkserver.Options{Proxied: true}) // or skipped
//		ctx := t.Context()
//		conn, err := zkadapter.Dial(ctx, zkadapter.Config{Servers: zk.Addrs()})
//		if err != nil {
//			t.Fatal(err)
//		}
//		t.Cleanup(func() { conn.Close() }) // before the servers go: cleanups run last first
//		... // the code under test, on conn
//		on, err := zk.ServerOf(ctx, conn.SessionID())
//		...
//		zk.Partition(on) // the client suspends, then resumes on another server
//		...
//		zk.Heal(on)
//		zk.Kill(on) // a crash; zk.Restart(ctx, on) brings it back
//	}
//
// ExampleNewStandalone and ExampleCluster_Partition are complete. Start
// reading at Standalone and Ensemble (cluster.go), then Partition
// (partition.go).
//
// # Servers
//
// Standalone(t, opts) and Ensemble(t, n, opts) return a *Cluster once
// every server serves. Server i (0 <= i < Len(), an ensemble's myid is
// i+1) is addressed by index: Addrs and ConnectString
// ("127.0.0.1:a,127.0.0.1:b,...") are what clients dial; Stop (SIGTERM),
// Kill (SIGKILL), Start and Restart (Start, then wait until it serves),
// Wipe (delete a stopped server's data, as a lost disk), WaitServing and
// WaitNotServing act on server i; Leader finds the ensemble's leader and
// ServerOf the server a client's session is on. A server serves
// when its four-letter word srvr answers with a Mode line (standalone,
// leader or follower): a peer without a quorum answers that it is not
// currently serving requests. Waiting polls every 50ms up to a deadline;
// that polls a server to come up, it does not order events. Outside a
// test, NewStandalone and NewEnsemble do the same and the caller must
// Close the cluster.
//
// The servers are fast to start and to test against: a tick of 100ms
// (sessions from 200ms to 2s by default: Options.MinSessionTimeout and
// MaxSessionTimeout), data on tmpfs (/dev/shm when it exists) with
// forceSync=no, a JVM tuned to start quickly (Options.Throughput for
// benchmarks), the admin server off and every four-letter word allowed.
//
// # Partitions
//
// With Options.Proxied a TCP proxy (internal/netproxy) stands in front of
// each server's client ports, and Addrs, ConnectString and Server.Addr
// name the proxies. Partition(i) silences server i's proxy: its clients'
// connections stay open and nothing passes, no FIN and no RST, so a client
// notices only when its own timeouts fire, as in a real partition; new
// connections are accepted and never answered. Heal(i) lets new
// connections through and resets those the partition silenced. Only
// clients are cut off: the server stays in its ensemble and keeps serving
// its DirectAddr. Partition's documentation says exactly what a client
// sees.
//
// # TLS
//
// With Options.TLS every server also serves TLS on a secure client port
// (Server.SecureAddr, Cluster.SecureAddrs; proxied too with Proxied),
// through the Netty connection factory
// (-Dzookeeper.serverCnxnFactory), which serves the plaintext port as
// well. The certificates come from a CA made at test time (NewTestCA or
// NewCA as Options.CA, or else one made for the cluster: Cluster.CA),
// valid for 127.0.0.1, ::1 and localhost; the server reads them as PEM key
// and trust stores. CA.ClientConfig and CA.MutualConfig configure clients;
// Options.ClientAuth (ssl.clientAuth) makes a client certificate wanted
// or needed. A TLS server serves once srvr answers on the plaintext port
// and a TLS handshake succeeds on the secure one.
//
// # Configuration and system properties
//
// Options.Extra appends lines to zoo.cfg; ZooKeeper turns a key it does
// not know there into the system property zookeeper.<key>. Settings read
// only from other system properties go in Options.SystemProperties
// (passed as -Dkey=value after the package's own, so they win), such as
// znode.container.checkIntervalMs. Options.ExtendedTypes enables TTL
// nodes (zookeeper.extendedTypesEnabled).
//
// # Installation
//
// The servers are ZooKeeper 3.8 from Debian's zookeeper package: the jars
// in /usr/share/java (JarDir). zookeeper.jar's manifest Class-Path names
// every jar the server needs but netty-codec, which TLS needs and the
// class path adds, and slf4j-simple, added when present so the server's
// log reaches server.log in its directory (LogTail shows its end; the
// cleanup logs it when the test failed). java must be on PATH. Available
// tells whether a server can start; Require skips or fails a test as
// Standalone and Ensemble do.
//
// # Goroutines
//
// Methods of a Cluster and a Server may be called from any goroutine.
// Standalone, Ensemble, Require and NewTestCA take a testing.TB and call
// its Fatal or Skip methods, so they must be called on the test's
// goroutine. A Cluster holds one goroutine per running server (waiting
// for its process) and, with Proxied, the proxies' goroutines: one per
// proxy and a few per open connection.
package zkserver
