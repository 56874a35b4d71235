package task_test

import (
	"slices"
	"testing"

	"github.com/zkflow/zkflow/task"
)

// The vectors are ZooKeeper's own: the output of
// java org.apache.zookeeper.server.auth.DigestAuthenticationProvider
// (3.8.0) for each credential.
func TestDigestID(t *testing.T) {
	for _, tc := range []struct{ cred, id string }{
		{"super:zookeeper", "super:yyuhPKumRtNj4r8GnSbbwuq1vhE="},
		{"alice:s3cret", "alice:uLxpHc/uhT86OXPoSjJTp1M8CJY="},
		{"nocolon", "nocolon:Ra+cHr2ZoHvBjtNArFGNGlVie4g="},
		{"a:b:c", "a:cLzgnoJ6mP5qz3w+mwvPE2vDgu0="}, // the user ends at the first colon
		{":", ":BaefBs8/Z/cm2uaNGKIpD2yaUMk="},
	} {
		if got := task.DigestID(tc.cred); got != tc.id {
			t.Errorf("DigestID(%q) = %q, want %q", tc.cred, got, tc.id)
		}
	}
	want := task.ACL{Perms: task.PermRead | task.PermAdmin, Scheme: "digest", ID: "alice:uLxpHc/uhT86OXPoSjJTp1M8CJY="}
	if got := task.DigestACL(task.PermRead|task.PermAdmin, "alice", "s3cret"); got != want {
		t.Errorf("DigestACL = %+v, want %+v", got, want)
	}
}

func TestACLProviderFor(t *testing.T) {
	mine := []task.ACL{{Perms: task.PermRead, Scheme: "world", ID: "anyone"}}
	byPath := task.ACLProvider(func(p string) []task.ACL {
		if p == "/mine" {
			return mine
		}
		return nil
	})
	tests := []struct {
		name string
		p    task.ACLProvider
		path string
		want []task.ACL
	}{
		{"nil provider", nil, "/x", task.OpenACL},
		{"answer", byPath, "/mine", mine},
		{"nil answer", byPath, "/other", task.OpenACL},
		{"fixed", task.FixedACL(mine), "/any", mine},
		{"empty answer kept", task.FixedACL([]task.ACL{}), "/any", []task.ACL{}},
	}
	for _, tc := range tests {
		if got := tc.p.For(tc.path); !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("%s: For(%q) = %v, want %v", tc.name, tc.path, got, tc.want)
		}
	}
}
