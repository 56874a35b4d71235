// Package zkserver starts real Apache ZooKeeper servers for tests: a
// standalone server or an ensemble of quorum peers, on free loopback
// ports, with data directories on tmpfs (/dev/shm when it exists) and
// forceSync=no, from Debian's zookeeper package (3.8; jars in
// /usr/share/java, whose manifest Class-Path names every jar it needs but
// netty-codec, which TLS needs and the class path adds).
//
// Start here: Standalone(t, Options{}) or Ensemble(t, 3, Options{}) return a
// *Cluster that serves when they return; Addrs gives the client addresses;
// Stop (SIGTERM), Kill (SIGKILL) and Start restart any one server. Every
// process is killed and every directory removed by t.Cleanup, and the JVMs
// get SIGKILL if the test binary dies (Pdeathsig).
//
// TLS: with Options.TLS every server also serves TLS on a secure client
// port (Server.SecureAddr, Cluster.SecureAddrs), through the Netty
// connection factory (-Dzookeeper.serverCnxnFactory), which serves the
// plaintext port too. The certificates come from a CA made at test time
// (NewTestCA, or Cluster.CA when Options.CA is nil), valid for 127.0.0.1,
// ::1 and localhost; the server reads them as PEM key and trust stores.
// CA.ClientConfig and CA.MutualConfig configure clients;
// Options.ClientAuth (ssl.clientAuth) makes a client certificate wanted or
// needed. A TLS server serves once srvr answers on the plaintext port and
// a TLS handshake succeeds on the secure one.
//
// Availability: when java or the jars are missing, Standalone and Ensemble
// skip the test with a message saying how to run it (make test, which runs
// .ci/install-deps); with ZK_REQUIRED=1 in the environment (make test sets
// it) a missing server fails the test instead.
//
// A server "serves" when its four-letter word srvr answers with a Mode line
// (standalone, leader or follower): a peer without a quorum answers that it
// is not currently serving requests. Waiting polls every 50ms up to a
// deadline; that is polling a server to come up, not ordering events.
//
// Methods of a Cluster may be called from any goroutine except where they
// take a testing.TB, which must be the test goroutine (they call t.Fatal).
package zkserver
