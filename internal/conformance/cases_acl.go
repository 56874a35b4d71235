package conformance

import (
	"slices"
	"strings"

	"github.com/zkflow/zkflow/task"
)

// Credentials and ACL entries of the access-control cases. Sessions get
// credentials from NewAuthClient (the target must be an AuthTarget); e.C
// presents none, so it has only its ip id (127.0.0.1 on a loopback
// server, the fake's default).
var (
	alice = task.AuthInfo{Scheme: "digest", Auth: []byte("alice:wonderland")}
	bob   = task.AuthInfo{Scheme: "digest", Auth: []byte("bob:builder")}
)

func aliceACL(perms int32) task.ACL { return task.DigestACL(perms, "alice", "wonderland") }
func bobACL(perms int32) task.ACL   { return task.DigestACL(perms, "bob", "builder") }
func world(perms int32) task.ACL    { return task.ACL{Perms: perms, Scheme: "world", ID: "anyone"} }
func authACL(perms int32) task.ACL  { return task.ACL{Perms: perms, Scheme: "auth"} }
func ipACL(perms int32, id string) task.ACL {
	return task.ACL{Perms: perms, Scheme: "ip", ID: id}
}

// World entries with every permission but one.
var (
	noRead   = world(task.PermAll &^ task.PermRead)
	noWrite  = world(task.PermAll &^ task.PermWrite)
	noCreate = world(task.PermAll &^ task.PermCreate)
	noDelete = world(task.PermAll &^ task.PermDelete)
	noAdmin  = world(task.PermAll &^ task.PermAdmin)
)

// MkACL creates a persistent node under Base with acl (e.C needs CREATE on
// its parent) and fails the case on error.
func (e *Env) MkACL(rel, data string, acl ...task.ACL) task.Stat {
	e.T.Helper()
	r := e.C.Do(&task.CreateRequest{Path: e.P(rel), Data: []byte(data), ACL: acl})
	if r.Err != nil {
		e.T.Fatalf("create %s with %v: %v", rel, acl, r.Err)
	}
	return r.Stat
}

// SetACL replaces path's ACL through c (any version), failing the case on
// error.
func (e *Env) SetACL(c *Client, path string, acl ...task.ACL) {
	e.T.Helper()
	if r := c.Do(&task.SetACLRequest{Path: path, ACL: acl, Version: task.AnyVersion}); r.Err != nil {
		e.T.Fatalf("setACL %s to %v: %v", path, acl, r.Err)
	}
}

// ACLOf reads path's ACL through c, failing the case on error.
func (e *Env) ACLOf(c *Client, path string) task.Response {
	e.T.Helper()
	r := c.Do(&task.GetACLRequest{Path: path})
	if r.Err != nil {
		e.T.Fatalf("getACL %s: %v", path, r.Err)
	}
	return r
}

// sortedACL orders entries (the server expands "auth" from a set, in no
// order it promises).
func sortedACL(acl []task.ACL) []task.ACL {
	acl = slices.Clone(acl)
	slices.SortFunc(acl, func(a, b task.ACL) int {
		return strings.Compare(a.Scheme+" "+a.ID, b.Scheme+" "+b.ID)
	})
	return acl
}

func get(p string) *task.GetDataRequest { return &task.GetDataRequest{Path: p} }
func set(p string) *task.SetDataRequest {
	return &task.SetDataRequest{Path: p, Version: task.AnyVersion}
}
func setACL(p string, version int32, acl ...task.ACL) *task.SetACLRequest {
	return &task.SetACLRequest{Path: p, ACL: acl, Version: version}
}

func aclCases() []Case {
	var cs []Case
	for _, group := range [][]Case{
		aclReadWriteCases(), aclValidityCases(), aclPermissionCases(),
		aclPrecedenceCases(), aclIdentityCases(), aclWatchCases(),
		aclConfigCases(),
	} {
		cs = append(cs, group...)
	}
	return cs
}
