package task_test

import (
	"slices"
	"testing"

	"github.com/zkflow/zkflow/task"
)

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
