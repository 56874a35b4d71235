package fakezk_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// AdminSetACL: "as for a zkCli setAcl" by the super user. ZooKeeper's
// super user always holds an authenticated id (DigestAuthenticationProvider
// adds digest:super:<hash> along with super:, X509 its x509 id), so
// PrepRequestProcessor.fixupACL turns an "auth" entry of its setAcl into
// that id: `setAcl /n auth::cdrwa` as super succeeds. The fake's operator
// holds no id, and the same ACL fails with ErrInvalidACL: the difference
// AdminSetACL's doc states.
func TestAdminSetACLAuthSchemeRefused(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	defer srv.Close()
	if err := srv.AdminCreate("/n", nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := srv.AdminSetACL("/n", []task.ACL{{Perms: task.PermAll, Scheme: "auth"}}); !errors.Is(err, task.ErrInvalidACL) {
		t.Fatalf("AdminSetACL auth::cdrwa = %v, want ErrInvalidACL (the documented difference)", err)
	}
}
