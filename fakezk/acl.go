package fakezk

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/zkflow/zkflow/task"
)

// Access control as ZooKeeper 3.8 does it with its two default
// authentication providers, digest and ip (ProviderRegistry): a
// ZooKeeperServer.checkACL on each request, PrepRequestProcessor.fixupACL
// on each ACL a create or setACL stores, and the ids a connection gains
// from its address and its addAuth packets.

// authID is one id a connection has proven (ServerCnxn.authInfo).
type authID struct{ scheme, id string }

// principal is who makes a request: the ids of the session's connection.
// The operator's hand (Admin*) is the super user, whom no ACL stops.
type principal struct {
	ids   []authID
	super bool
}

var superUser = &principal{super: true}

// DefaultClientIP is the address a Conn's client has, as the server sees
// it, when ConnConfig.IP is empty: loopback, as for a client on the
// server's own machine.
const DefaultClientIP = "127.0.0.1"

// newPrincipal returns the ids a connection from ip that sends the
// credentials auth has: ip:<address> (every connection has it, as
// NIOServerCnxn adds it), then digest:user:hash for each digest
// credential. A credential of another scheme is refused, as a server
// without a provider for it refuses it (AuthFailed, and it closes the
// connection); an "ip" credential adds nothing new (IPAuthenticationProvider
// adds the connection's address again).
func newPrincipal(ip string, auth []task.AuthInfo) (*principal, error) {
	if ip == "" {
		ip = DefaultClientIP
	}
	p := &principal{ids: []authID{{"ip", ip}}}
	for _, a := range auth {
		var id authID
		switch a.Scheme {
		case "digest":
			// DigestAuthenticationProvider hashes the credential as a
			// Java String: bytes that are not UTF-8 are U+FFFD there.
			id = authID{"digest", task.DigestID(javaString(string(a.Auth)))}
		case "ip":
			continue
		default:
			return nil, fmt.Errorf("fakezk: credential of scheme %q: %w", a.Scheme, task.CodeAuthFailed)
		}
		if !slices.Contains(p.ids, id) { // authInfo is a set
			p.ids = append(p.ids, id)
		}
	}
	return p, nil
}

// grantSuper makes who the super user if one of its digest ids is the
// configured superDigest (DigestAuthenticationProvider adds the id
// super: for it). Lock held or who not shared yet.
func grantSuper(who *principal, superDigest string) {
	if superDigest == "" {
		return
	}
	for _, id := range who.ids {
		if id.scheme == "digest" && id.id == superDigest {
			who.super = true
		}
	}
}

// allowed is ZooKeeperServer.checkACL: an empty ACL allows everything,
// the super user everything; otherwise some entry holding one of perm's
// bits must match one of the principal's ids.
func allowed(acl []task.ACL, perm int32, who *principal) bool {
	if len(acl) == 0 || who.super {
		return true
	}
	for _, a := range acl {
		if a.Perms&perm == 0 {
			continue
		}
		if a.Scheme == "world" && a.ID == "anyone" {
			return true
		}
		for _, id := range who.ids {
			if id.scheme == a.Scheme && matches(a.Scheme, id.id, a.ID) {
				return true
			}
		}
	}
	return false
}

// checkACL reports ErrNoAuth unless who holds one of perm's bits on acl.
func checkACL(acl []task.ACL, perm int32, who *principal) error {
	if !allowed(acl, perm, who) {
		return task.ErrNoAuth
	}
	return nil
}

// matches is the providers' matches: a digest id is equal to the entry's,
// an ip address lies in the entry's range.
func matches(scheme, id, expr string) bool {
	switch scheme {
	case "digest":
		return id == expr
	case "ip":
		return ipMatches(id, expr)
	}
	return false
}

// worldACLs[p] is the list world:anyone with perms p: nodes share these
// (a node's ACL is never changed in place, only replaced).
var worldACLs = func() (out [32][]task.ACL) {
	for p := range out {
		out[p] = []task.ACL{{Perms: int32(p), Scheme: "world", ID: "anyone"}}
	}
	return out
}()

// fixupACL is PrepRequestProcessor.fixupACL: duplicates go; an empty list
// is ErrInvalidACL; world:anyone stays; "auth" becomes one entry per
// authenticated id of the requester (digest; ip is not "authenticated"),
// ErrInvalidACL if it has none; any other entry must be of a known scheme
// with a valid id (world with another id is ErrInvalidACL: world has no
// provider). The result is what the node stores.
func fixupACL(acl []task.ACL, who *principal) ([]task.ACL, error) {
	if len(acl) == 1 && acl[0].Scheme == "world" && acl[0].ID == "anyone" && acl[0].Perms >= 0 && int(acl[0].Perms) < len(worldACLs) {
		return worldACLs[acl[0].Perms], nil // the common case, without allocating
	}
	var uniq []task.ACL
	for _, a := range acl {
		// The server reads the scheme and id as Java Strings.
		a.Scheme, a.ID = javaString(a.Scheme), javaString(a.ID)
		if !slices.Contains(uniq, a) {
			uniq = append(uniq, a)
		}
	}
	if len(uniq) == 0 {
		return nil, task.ErrInvalidACL
	}
	out := make([]task.ACL, 0, len(uniq))
	for _, a := range uniq {
		switch {
		case a.Scheme == "world" && a.ID == "anyone":
			out = append(out, a)
		case a.Scheme == "auth":
			n := len(out)
			for _, id := range who.ids {
				if id.scheme == "digest" {
					out = append(out, task.ACL{Perms: a.Perms, Scheme: id.scheme, ID: id.id})
				}
			}
			if len(out) == n {
				return nil, task.ErrInvalidACL
			}
		case a.Scheme == "digest" && digestValid(a.ID), a.Scheme == "ip" && ipValid(a.ID):
			out = append(out, a)
		default:
			return nil, task.ErrInvalidACL
		}
	}
	return out, nil
}

// digestValid is DigestAuthenticationProvider.isValid: id.split(":") has
// two parts (Java's split drops trailing empty strings, so "u:" has one
// and ":h" two).
func digestValid(id string) bool {
	parts := strings.Split(id, ":")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return len(parts) == 2
}

// ipValid is IPAuthenticationProvider.isValid: an IPv4 address (3.8 has
// no IPv6 here), optionally /bits with bits in [0, 32].
func ipValid(expr string) bool {
	_, ok := ipRange(expr)
	return ok
}

type ipNet struct {
	addr [4]byte
	bits int
}

// ipRange parses a.b.c.d[/bits] as IPAuthenticationProvider does.
func ipRange(expr string) (ipNet, bool) {
	addr, bitsStr, hasBits := strings.Cut(expr, "/")
	b, ok := ipv4(addr)
	if !ok {
		return ipNet{}, false
	}
	n := ipNet{addr: b, bits: 32}
	if hasBits {
		bits, err := strconv.Atoi(bitsStr)
		if err != nil || bits < 0 || bits > 32 {
			return ipNet{}, false
		}
		n.bits = bits
	}
	return n, true
}

// ipv4 is v4addr2Bytes: four dot-separated decimal numbers in [0, 255]
// (Integer.parseInt, so a sign is accepted).
func ipv4(s string) ([4]byte, bool) {
	var b [4]byte
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return b, false
	}
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 32)
		if err != nil || v < 0 || v > 255 {
			return b, false
		}
		b[i] = byte(v)
	}
	return b, true
}

// ipMatches is IPAuthenticationProvider.matches: addr lies in expr's range.
func ipMatches(addr, expr string) bool {
	n, ok := ipRange(expr)
	if !ok {
		return false
	}
	a, ok := ipv4(addr)
	if !ok {
		return false
	}
	for i := range 4 {
		keep := min(max(n.bits-8*i, 0), 8)
		mask := byte(0xff << (8 - keep))
		if a[i]&mask != n.addr[i]&mask {
			return false
		}
	}
	return true
}

// redactDigests is what getACL answers a session with READ but not ADMIN
// (FinalRequestProcessor): digest ids as id.replaceAll(":.*", ":x") makes
// them.
func redactDigests(acl []task.ACL) []task.ACL {
	out := make([]task.ACL, len(acl))
	for i, a := range acl {
		if a.Scheme == "digest" {
			a.ID = redactID(a.ID)
		}
		out[i] = a
	}
	return out
}

// redactID is Java's id.replaceAll(":.*", ":x"): each colon and what
// follows it up to a line terminator (which "." does not match) becomes
// ":x", so an id with a line break has each line's rest redacted.
func redactID(id string) string {
	i := strings.IndexByte(id, ':')
	if i < 0 {
		return id
	}
	var b strings.Builder
	for {
		b.WriteString(id[:i])
		b.WriteString(":x")
		rest := id[i+1:]
		end := strings.IndexFunc(rest, isLineTerminator)
		if end < 0 {
			return b.String()
		}
		id = rest[end:]
		if i = strings.IndexByte(id, ':'); i < 0 {
			b.WriteString(id)
			return b.String()
		}
	}
}

// isLineTerminator reports the runes java.util.regex's "." does not
// match (without DOTALL or UNIX_LINES).
func isLineTerminator(r rune) bool {
	switch r {
	case '\n', '\r', '\u0085', '\u2028', '\u2029':
		return true
	}
	return false
}

// javaString is s as a 3.8 server holds it: a Java String decoded from
// s's bytes as UTF-8 (jute's readString, and the digest provider's
// new String(auth) on a UTF-8 JVM), here encoded back. Valid UTF-8 is
// unchanged; each ill-formed sequence is one U+FFFD, as the JDK's
// decoder cuts them (malformedLen).
func javaString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError || n > 1 {
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		b.WriteRune(utf8.RuneError)
		i += malformedLen(s[i:])
	}
	return b.String()
}

// malformedLen is how many bytes at the start of s, an ill-formed UTF-8
// sequence, the JDK 17 decoder replaces with one U+FFFD: the lead byte
// and the continuation bytes that could still follow it (the maximal
// subpart), except that a complete 3-byte encoding of a surrogate is one
// sequence (String.decodeUTF8_UTF16: isMalformed3, malformed3,
// malformed4).
func malformedLen(s string) int {
	cont := func(i int, lo, hi byte) bool { return i < len(s) && s[i] >= lo && s[i] <= hi }
	switch c := s[0]; {
	case c >= 0xe0 && c <= 0xef:
		lo := byte(0x80)
		if c == 0xe0 {
			lo = 0xa0
		}
		switch {
		case !cont(1, lo, 0xbf):
			return 1
		case !cont(2, 0x80, 0xbf):
			return 2
		}
		return 3
	case c >= 0xf0 && c <= 0xf4:
		lo, hi := byte(0x80), byte(0xbf)
		switch c {
		case 0xf0:
			lo = 0x90
		case 0xf4:
			hi = 0x8f
		}
		switch {
		case !cont(1, lo, hi):
			return 1
		case !cont(2, 0x80, 0xbf):
			return 2
		}
		return 3
	}
	return 1
}

// wireACL is acl (a copy the caller owns) with its schemes and ids as a
// 3.8 server writes them in a reply (javaWire).
func wireACL(acl []task.ACL) []task.ACL {
	for i := range acl {
		acl[i].Scheme, acl[i].ID = javaWire(acl[i].Scheme), javaWire(acl[i].ID)
	}
	return acl
}

// javaWire is s as jute's BinaryOutputArchive.writeString sends it:
// UTF-8 char by char of the Java String, so that a character above
// U+FFFF goes as its two UTF-16 surrogates, three bytes each (CESU-8).
// Everything else is unchanged.
func javaWire(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return r > 0xffff }) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if n < 4 {
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		r1, r2 := utf16.EncodeRune(r)
		for _, c := range [2]rune{r1, r2} {
			b.Write([]byte{0xe0 | byte(c>>12), 0x80 | byte(c>>6)&0x3f, 0x80 | byte(c)&0x3f})
		}
		i += n
	}
	return b.String()
}
