package zkserver

import (
	"path/filepath"
	"strings"
	"testing"
)

// Another process can take a port between freePorts and the server's bind
// (parallel test packages each start servers). The server that loses then
// exits, and the port answers for the other one: the start must not take
// that server for its own. It starts again on other ports.
func TestStartOnTakenPort(t *testing.T) {
	other := Standalone(t, Options{})
	taken := other.servers[0].clientPort
	calls := 0
	pickPorts = func(n int) ([]int, error) {
		calls++
		ps, err := freePorts(n)
		if err == nil && calls == 1 {
			ps[0] = taken
		}
		return ps, err
	}
	defer func() { pickPorts = freePorts }()
	c := Standalone(t, Options{})
	s := c.servers[0]
	if s.clientPort == taken || calls < 2 {
		t.Fatalf("started on port %d (taken: %d) after %d picks", s.clientPort, taken, calls)
	}
	out, err := fourLetter(t.Context(), s.DirectAddr(), "conf")
	if err != nil || !strings.Contains(out, filepath.Join(s.dir, "data")) {
		t.Fatalf("%s answers for another server: %v\n%s", s.DirectAddr(), err, out)
	}
}
