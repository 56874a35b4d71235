package task

import (
	"crypto/sha1"
	"encoding/base64"
	"strings"
)

// DigestACL returns the ACL entry granting perms to the digest user
// user:password: scheme "digest", id user:base64(sha1(user:password)), as
// ZooKeeper's DigestAuthenticationProvider computes it. A session matches
// it when it presents AuthInfo{Scheme: "digest", Auth: []byte(user + ":" +
// password)}.
func DigestACL(perms int32, user, password string) ACL {
	return ACL{Perms: perms, Scheme: "digest", ID: DigestID(user + ":" + password)}
}

// DigestID is the id the server gives a session that presents the digest
// credential userPassword ("user:password"): the user, a colon and
// base64(sha1(userPassword)). The user is what precedes the first colon.
func DigestID(userPassword string) string {
	user, _, _ := strings.Cut(userPassword, ":")
	sum := sha1.Sum([]byte(userPassword))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// ACLProvider gives the ACL to create a node with, by the node's path, as
// Apache Curator's ACLProvider does. Every recipe that creates nodes takes
// one (an option of the recipe) and asks it for every node it creates:
// the recipe's own nodes, the ancestors it creates for them, and the
// creates inside its multis. For a sequential node the path is the one
// sent, before the server appends the sequence number.
//
// A nil ACLProvider, or a nil answer, means OpenACL. An empty non-nil
// answer is sent as it is, and the server refuses it (ErrInvalidACL).
//
// The provider is called on the executor goroutine, possibly more than
// once for a path (each attempt of a create asks again); it must not block
// and should answer the same for the same path. The slice it returns is
// sent, not copied: do not change it afterwards.
type ACLProvider func(path string) []ACL

// For returns the ACL to create path with: p's answer, or OpenACL when p
// is nil or answers nil.
func (p ACLProvider) For(path string) []ACL {
	if p == nil {
		return OpenACL
	}
	if acl := p(path); acl != nil {
		return acl
	}
	return OpenACL
}

// FixedACL returns an ACLProvider that answers acl for every path.
func FixedACL(acl []ACL) ACLProvider {
	return func(string) []ACL { return acl }
}
