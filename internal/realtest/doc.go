// Package realtest gives the recipes' real-server tests a client in one
// call: Dial connects to a real ZooKeeper server (or ensemble) through
// zkadapter, makes an executor on that session and runs it on a goroutine
// of its own until the client is stopped.
//
// Start here: c := realtest.Dial(t, ctx, cl.Addrs(), realtest.Options{})
// with cl from zkserver.Standalone or zkserver.Ensemble; run chains with
// executor.Await(ctx, c.Ex, ...). c.Stop closes the executor (which closes
// the connection, so the session ends and its ephemeral nodes go) and
// waits until its Run has returned; it is idempotent, safe from any
// goroutine, and registered with t.Cleanup, so a test that never calls it
// leaves no goroutine behind.
//
// Errors: a failed dial (a server that is down, an invalid address, a
// context that ends first) or a failed executor.New fails the test with
// t.Fatalf naming the addresses; Dial must therefore be called on the test
// goroutine.
//
// Options.SessionTimeout defaults to 10s (what every recipe's real-server
// test asked for). Errors of flows nobody waits for (executor
// Config.OnError) are dropped unless Options.LogDetached is set, in which
// case each is logged with t.Logf.
//
// Chroot: Options.Root puts a client under a root (zkadapter.Config.Root).
// MakeRoot creates a fresh root with a client that has none, as whoever
// provisions a chrooted application does (a client does not create its
// root); CheckRoot, at the end of a test on a server of its own, fails it
// unless the rooted clients wrote below the root and nowhere else. A
// recipe package runs its main real-server test once more that way.
//
// This package is separate from zkadapter/zkserver because zkadapter's
// own tests import zkserver: zkserver importing zkadapter would make a
// cycle.
package realtest
