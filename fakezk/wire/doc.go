// Package wire serves ZooKeeper's client protocol, as a 3.8.0 server
// speaks it, for an in-memory fakezk.Server: go-zookeeper, Curator,
// kazoo, zkCli or any other client connects over TCP to the fake, with its
// clock and its faults.
//
//	zk := fakezk.New(fakezk.Config{Clock: task.RealClock(), TickTime: 500 * time.Millisecond})
//	srv := wire.New(zk, wire.Config{})
//	l, _ := net.Listen("tcp", "127.0.0.1:0")
//	go srv.Serve(l)
//	defer srv.Close()
//	conn, _, _ := gozk.Connect([]string{l.Addr().String()}, 2*time.Second)
//
// Outside clients run in real time: give the fakezk.Server the real clock
// (task.RealClock) so that session timeouts and partitions pass as the
// client's own timers do, or a fakezk.Clock to decide in a test when a
// session expires.
//
// # What it guarantees
//
//   - Each connection is one client link of a session: the handshake opens
//     a session (fakezk.Server.Accept) or resumes one (Resume) whose
//     password checks out (Password); an unknown or expired session gets
//     session id 0 and a closed connection; a client that has seen a later
//     zxid than the server's is closed without a connect response. The
//     readOnly byte is answered in the shape the client sent.
//   - Replies go out in request order, each notification (xid -1) at the
//     place the session queued it: a write's notifications to its own
//     session before the write's reply, one notification per session and
//     trigger.
//   - A frame longer than Config.MaxFrame (jute.maxbuffer) or a record
//     that does not decode closes that connection only; an opcode a
//     3.8.0 server does not know is answered Unimplemented and then, as
//     there, the connection closes (the session lives on). No input
//     panics the server (FuzzConn).
//   - Requests are checked as the server checks them, not as a client
//     library does: a write's path, mode and TTL; a read, sync or watch
//     request takes any path (NoNode, "" the root), as on 3.8.0.
//   - The fault methods of fakezk.Server apply: take a session's Conn with
//     fakezk.Server.SessionConn; Drop, Partition, Expire, Restart,
//     LoseQuorum and Wipe close its link at once, even while Delay holds
//     its replies, and the client reconnects as it would to a real
//     server.
//   - Close ends every goroutine of the Server; the sessions live on in
//     the fakezk.Server.
//
// The command fakezk/wire/cmd/fakezk serves it from a zoo.cfg, with a
// zkServer.sh stand-in for suites that start ZooKeeper (README.md there);
// go-zookeeper's own suite through it and through a real server:
// GOZK_SUITE.md beside this file.
//
// The opcodes served, the records, and what differs from a real server
// are in PROTOCOL.md beside this file.
package wire
