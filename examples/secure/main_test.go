package main

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/examples/internal/extest"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// writeFiles writes the CA certificate and its client certificate and key
// into a temporary directory, as a user would have them, and returns
// their paths.
func writeFiles(t *testing.T, ca *zkserver.CA) (caFile, certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	caFile, certFile, keyFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	for name, b := range map[string][]byte{caFile: ca.CertPEM, certFile: ca.ClientCertPEM, keyFile: ca.ClientKeyPEM} {
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return caFile, certFile, keyFile
}

func TestSecureOnRealServer(t *testing.T) {
	srv := zkserver.Standalone(t, zkserver.Options{TLS: true})
	caFile, _, _ := writeFiles(t, srv.CA())
	out := extest.Run(t, run, []string{"-zk", extest.Chroot(t, srv, srv.Server(0).SecureAddr()), "-ca", caFile},
		"over TLS 1.2", `issued by "CN=zkflow test CA"`, "wrote and read back")
	t.Log(out)
}

// With -user and -password the node is created with a digest ACL for that
// user only, and the session's credentials let it read the node back.
func TestSecureDigestOnRealServer(t *testing.T) {
	srv := zkserver.Standalone(t, zkserver.Options{TLS: true})
	caFile, _, _ := writeFiles(t, srv.CA())
	extest.Run(t, run, []string{"-zk", extest.Chroot(t, srv, srv.Server(0).SecureAddr()), "-ca", caFile, "-user", "alice", "-password", "secret"},
		"wrote and read back", "OK")
}

// With ssl.clientAuth=need, the example connects with -cert and -key and
// is refused without them.
func TestSecureMutualOnRealServer(t *testing.T) {
	srv := zkserver.Standalone(t, zkserver.Options{TLS: true, ClientAuth: zkserver.ClientAuthNeed})
	caFile, certFile, keyFile := writeFiles(t, srv.CA())
	addr := extest.Chroot(t, srv, srv.Server(0).SecureAddr())
	extest.Run(t, run, []string{"-zk", addr, "-ca", caFile, "-cert", certFile, "-key", keyFile}, "wrote and read back")
	extest.Refused(t, run, []string{"-zk", addr, "-ca", caFile, "-timeout", "1s"})
}

func TestSecureBadFlags(t *testing.T) {
	extest.Refused(t, run,
		[]string{},
		[]string{"-zk", "127.0.0.1:2281", "-cert", "client.pem"},
		[]string{"-zk", "127.0.0.1:2281", "-ca", "/nonexistent/ca.pem"},
		[]string{"-zk", "127.0.0.1:2281", "extra"},
		[]string{"-zk", "127.0.0.1:2281", "-user", "alice"},
	)
	// A connect string that does not parse is refused before any dial.
	extest.RefusedConnectStrings(t, run)
}
