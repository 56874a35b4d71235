package task_test

import (
	"errors"
	"fmt"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// A Task written by hand: a step starts work and calls its continuation
// once. Operations fail with errors that name the operation and path.
func Example() {
	srv := fakezk.New(fakezk.Config{})
	ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{})})
	defer ex.Shutdown()

	// createThenWatch creates a node, then waits for its next change.
	createThenWatch := task.Task[task.Event](func(s *task.Scope, k task.Cont[task.Event]) {
		task.Create("/config", []byte("v1"), task.Persistent)(s, func(path string, err error) {
			if err != nil {
				k(task.Event{}, err)
				return
			}
			task.GetW(path)(s, func(d task.DataWatch, err error) {
				if err != nil {
					k(task.Event{}, err)
					return
				}
				fmt.Printf("read %s, waiting for a change\n", d.Data.Data)
				task.Run(s, d.Watch.Wait(), k)
			})
		})
	})
	executor.Submit(ex, createThenWatch, func(ev task.Event, err error) { fmt.Println("event:", ev, err) })
	ex.RunUntilIdle()
	executor.Submit(ex, task.Set("/config", []byte("v2"), 0), nil)
	ex.RunUntilIdle()

	executor.Submit(ex, task.Get("/missing"), func(_ task.Data, err error) {
		var oe *task.OpError
		fmt.Println(err, errors.Is(err, task.ErrNoNode), errors.As(err, &oe) && oe.Op == "get")
	})
	ex.RunUntilIdle()
	// Output:
	// read v1, waiting for a change
	// event: NodeDataChanged /config <nil>
	// zk get /missing: node does not exist true true
}

// Paths are checked against ZooKeeper's rules before anything is sent.
func ExampleValidatePath() {
	for _, p := range []string{"/a/b", "a", "/a/", "/a//b", "/a/./b", "/a\x01"} {
		fmt.Printf("%q: %v\n", p, task.ValidatePath(p, false))
	}
	fmt.Println(task.ValidatePath("/queue/item-", true))
	// Output:
	// "/a/b": <nil>
	// "a": invalid path "a": must start with /
	// "/a/": invalid path "/a/": must not end with /
	// "/a//b": invalid path "/a//b": empty node name
	// "/a/./b": invalid path "/a/./b": relative paths not allowed
	// "/a\x01": invalid path "/a\x01": invalid character U+0001 at 2
	// <nil>
}

// Access control: a connection presents credentials (here alice's digest
// user and password); a node's ACL says who may do what. Others may read
// this node but not write it, and they see alice's id only as "alice:x".
func ExampleSetACL() {
	srv := fakezk.New(fakezk.Config{})
	alice, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{
		Auth: []task.AuthInfo{{Scheme: "digest", Auth: []byte("alice:secret")}},
	})})
	defer alice.Shutdown()
	other, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{})})
	defer other.Shutdown()

	acl := []task.ACL{
		task.DigestACL(task.PermAll, "alice", "secret"),
		{Perms: task.PermRead, Scheme: "world", ID: "anyone"},
	}
	executor.Submit(alice, task.Create("/app", []byte("v1"), task.Persistent), nil)
	executor.Submit(alice, task.SetACL("/app", acl, 0), func(st task.Stat, err error) {
		fmt.Println("set acl: aversion", st.Aversion, err)
	})
	alice.RunUntilIdle()

	executor.Submit(other, task.Get("/app"), func(d task.Data, err error) { fmt.Printf("other reads %s %v\n", d.Data, err) })
	executor.Submit(other, task.Set("/app", []byte("v2"), -1), func(_ task.Stat, err error) { fmt.Println(err) })
	executor.Submit(other, task.GetACL("/app"), func(a task.NodeACL, err error) { fmt.Println("other sees", a.ACL) })
	other.RunUntilIdle()
	executor.Submit(alice, task.GetACL("/app"), func(a task.NodeACL, err error) { fmt.Println("alice sees", a.ACL[0].ID) })
	alice.RunUntilIdle()
	// Output:
	// set acl: aversion 1 <nil>
	// other reads v1 <nil>
	// zk set /app: not authenticated
	// other sees [{31 digest alice:x} {1 world anyone}]
	// alice sees alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=
}

// A multi built from the op constructors: check a node's version, set
// it, create another and delete a third, all or none.
func ExampleMulti() {
	srv := fakezk.New(fakezk.Config{})
	ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{})})
	defer ex.Shutdown()
	for _, p := range []string{"/counter", "/old"} {
		executor.Submit(ex, task.Create(p, nil, task.Persistent), nil)
	}
	ex.RunUntilIdle()
	multi := task.Multi(
		task.CheckOp("/counter", 0),
		task.SetOp("/counter", []byte("1"), 0),
		task.CreateOp("/new", []byte("n"), task.Persistent),
		task.DeleteOp("/old", task.AnyVersion),
	)
	executor.Submit(ex, multi, func(rs []task.MultiResult, err error) { fmt.Println(len(rs), err) })
	ex.RunUntilIdle()
	// The same multi again: the check fails, so nothing is applied.
	executor.Submit(ex, multi, func(_ []task.MultiResult, err error) { fmt.Println(errors.Is(err, task.ErrBadVersion)) })
	ex.RunUntilIdle()
	// Output:
	// 4 <nil>
	// true
}
