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
