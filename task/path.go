package task

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxDataSize (1 MiB) is the default limit both Conn implementations put
// on the data of one request: the Data of a create or a set, and the sum of the Data of
// a multi's creates and sets. Data over it is refused with ErrDataTooLarge
// before anything is sent; connections may be configured with another.
//
// It is not the largest data that gets through. ZooKeeper's own limit
// (jute.maxbuffer, MaxPacketSize: 0xfffff bytes) is on the whole request
// packet as it goes on the wire, which counts the headers, the path and
// the ACL as well as the data; both Conn implementations refuse a request over it
// with ErrDataTooLarge too. So data of exactly MaxDataSize is always
// refused, and the largest create at path p with OpenACL carries
// 1,048,526 bytes for "/a", 50 bytes under MaxDataSize, one byte less for each
// further byte of path.
const MaxDataSize = 1 << 20

// ValidatePath checks path against ZooKeeper's rules (PathUtils.validatePath):
// absolute; no empty, "." or ".." component; no trailing slash except for
// the root; no NUL and none of the characters ZooKeeper forbids
// (U+0001-U+001F, U+007F-U+009F, U+D800-U+F8FF, U+FFF0-U+FFFF, and every
// rune above U+FFFF, which Java encodes as forbidden surrogates).
// sequential says the server will append a sequence number, so a trailing
// slash is allowed. The error wraps ErrInvalidPath and says what is wrong.
func ValidatePath(path string, sequential bool) error {
	if validASCII(path, sequential) {
		return nil // every request's path goes through here: most are plain
	}
	return validateFull(path, sequential)
}

// validateFull is ValidatePath's full check, with the reason of a refusal.
func validateFull(path string, sequential bool) error {
	if sequential {
		path += "1"
	}
	if path == "" {
		return pathErr(path, "empty")
	}
	if path[0] != '/' {
		return pathErr(path, "must start with /")
	}
	if len(path) == 1 {
		return nil
	}
	if path[len(path)-1] == '/' {
		return pathErr(path, "must not end with /")
	}
	if !utf8.ValidString(path) {
		return pathErr(path, "not valid UTF-8")
	}
	for i, r := range path {
		switch {
		case r == 0:
			return pathErr(path, fmt.Sprintf("null character at %d", i))
		case r > 0 && r < 0x20, r >= 0x7f && r <= 0x9f,
			r >= 0xd800 && r <= 0xf8ff, r >= 0xfff0:
			// Above U+FFFF too: Java sees such a rune as a surrogate pair,
			// and surrogates (U+D800-U+DFFF) are in the forbidden range.
			return pathErr(path, fmt.Sprintf("invalid character %U at %d", r, i))
		}
	}
	for comp := range strings.SplitSeq(path[1:], "/") {
		switch comp {
		case "":
			return pathErr(path, "empty node name")
		case ".", "..":
			return pathErr(path, "relative paths not allowed")
		}
	}
	return nil
}

// validASCII reports whether path, made of printable ASCII only, is
// valid, in one pass that allocates nothing. false means: not such a
// path, or not valid (ValidatePath's full check says which, and why).
func validASCII(path string, sequential bool) bool {
	if path == "" || path[0] != '/' {
		return false
	}
	start := 1 // of the current component
	for i := 1; i < len(path); i++ {
		switch c := path[i]; {
		case c < 0x20 || c >= 0x7f:
			return false
		case c == '/':
			if !validComponent(path[start:i]) {
				return false
			}
			start = i + 1
		}
	}
	// The last component: the server appends a number to a sequential
	// one (never empty nor a dot then); the root alone has none.
	return sequential || len(path) == 1 || validComponent(path[start:])
}

func validComponent(c string) bool { return c != "" && c != "." && c != ".." }

type pathError struct {
	path, why string
}

func (e *pathError) Error() string { return fmt.Sprintf("invalid path %q: %s", e.path, e.why) }
func (e *pathError) Unwrap() error { return ErrInvalidPath }

func pathErr(path, why string) error { return &pathError{path, why} }

// Join joins a parent path and a child name.
func Join(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}

// Parent returns the parent of an absolute path ("/" for top-level nodes).
func Parent(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/"
	}
	return path[:i]
}

// Base returns the last component of a path.
func Base(path string) string {
	return path[strings.LastIndexByte(path, '/')+1:]
}
