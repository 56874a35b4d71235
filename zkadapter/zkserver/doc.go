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
// ExampleNewStandalone and ExampleCluster_Partition are complete.
//
// # Servers
//
// Standalone and Ensemble return a *Cluster once every server serves.
// Server i (an ensemble's myid is i+1) is addressed by index: Addrs and
// ConnectString are what clients dial; Stop, Kill, Start, Restart, Wipe
// (a lost disk), WaitServing and WaitNotServing act on server i; Leader
// finds the ensemble's leader and ServerOf the server a client's session
// is on. The servers are fast to start: a tick of 100ms (sessions from
// 200ms to 2s by default), data on tmpfs with forceSync=no. Outside a
// test, NewStandalone and NewEnsemble do the same and the caller must
// Close the cluster.
//
// With Options.Proxied, Partition(i) silences server i's proxy (no FIN, no
// RST: clients notice only when their own timeouts fire) and Heal(i) lets
// connections through again; the server stays in its ensemble. With
// Options.TLS every server also serves TLS on a secure port, with
// certificates from a CA made at test time (Cluster.CA, CA.ClientConfig,
// CA.MutualConfig). Options.Extra appends lines to zoo.cfg,
// Options.SystemProperties sets -D properties, Options.ExtendedTypes
// enables TTL nodes. The servers are ZooKeeper 3.8 from the jars in
// /usr/share/java (JarDir); java must be on PATH.
//
// Methods of a Cluster and a Server may be called from any goroutine.
// Standalone, Ensemble, Require and NewTestCA take a testing.TB and call
// its Fatal or Skip methods, so they must be called on the test's
// goroutine.
//
// Every call and option in full, what a partitioned client sees, TLS,
// configuration and installation: zkadapter/zkserver/SERVERS.md.
package zkserver
