package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// zkCliPath is Debian's ZooKeeper command-line client.
const zkCliPath = "/usr/share/zookeeper/bin/zkCli.sh"

// requireZkCli skips the test without java or zkCli, or fails it with
// ZK_REQUIRED=1, as the real-server tests do.
func requireZkCli(t *testing.T) {
	t.Helper()
	zkserver.Require(t)
	if _, err := os.Stat(zkCliPath); err != nil {
		if os.Getenv("ZK_REQUIRED") == "1" {
			t.Fatalf("%s: %v (apt-get install zookeeper)", zkCliPath, err)
		}
		t.Skipf("%s: %v (apt-get install zookeeper)", zkCliPath, err)
	}
}

// ZooKeeper's own zkCli, one command per run as scripts use it, against
// the command: create, get, set, ls, stat, delete and deleteall say what
// they say against a real server.
func TestZkCli(t *testing.T) {
	requireZkCli(t)
	p := startProc(t, nil, filepath.Join(binDir, "fakezk"), "-port", "0")
	for _, step := range []struct {
		args []string
		want []string // each line must appear in the output
		not  []string
	}{
		{[]string{"create", "/cli", "hello"}, []string{"Created /cli"}, nil},
		{[]string{"create", "/cli/child", "c"}, []string{"Created /cli/child"}, nil},
		{[]string{"create", "/gone", "g"}, []string{"Created /gone"}, nil},
		{[]string{"set", "/cli", "world"}, nil, []string{"Exception", "Node does not exist"}},
		{[]string{"get", "-s", "/cli"}, []string{"world", "dataVersion = 1", "numChildren = 1"}, []string{"hello"}},
		{[]string{"stat", "/cli"}, []string{"cZxid = 0x", "dataVersion = 1", "dataLength = 5", "numChildren = 1", "ephemeralOwner = 0x0"}, []string{"world"}},
		{[]string{"ls", "/"}, []string{"[cli, gone, zookeeper]"}, nil},
		{[]string{"delete", "/gone"}, nil, []string{"Exception", "Node does not exist", "Node not empty"}},
		{[]string{"deleteall", "/cli"}, nil, []string{"Exception"}},
		{[]string{"ls", "/"}, []string{"[zookeeper]"}, []string{"cli", "gone"}},
	} {
		// -waitforconnection: the command runs once zkCli's watcher has
		// printed the connection's event (WATCHER::), not while it does
		// (the two lines were once printed inside "[zookeeper]").
		args := append([]string{"-server", p.addr, "-waitforconnection"}, step.args...)
		out, err := exec.Command(zkCliPath, args...).CombinedOutput()
		if err != nil && len(step.want) == 0 {
			t.Errorf("zkCli %s: %v\n%s", strings.Join(step.args, " "), err, out)
		}
		for _, w := range step.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("zkCli %s: no %q in\n%s", strings.Join(step.args, " "), w, out)
			}
		}
		for _, w := range step.not {
			if strings.Contains(string(out), w) {
				t.Errorf("zkCli %s: %q in\n%s", strings.Join(step.args, " "), w, out)
			}
		}
	}
}
