package main

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// zoo.cfg as ZooKeeper reads it: its keys, the three separators,
// comments; server.N lines and housekeeping keys are noted, other keys are
// the system property "zookeeper."+key.
func TestParseConfig(t *testing.T) {
	cfg := `# go-zookeeper's harness writes this
admin.enableServer=false
dataDir=/tmp/zk data
tickTime=500
initLimit=10
syncLimit : 5
clientPort 21810
clientPortAddress=127.0.0.1
maxClientCnxns=0
minSessionTimeout=1000
maxSessionTimeout=-1
! a comment too
reconfigEnabled=true
4lw.commands.whitelist=*
standaloneEnabled=false
server.1=127.0.0.1:2888:3888
server.2=127.0.0.1:2889:3889
extendedTypesEnabled=true
DigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU=
someFutureKey=1
`
	s := defaults()
	if err := parseConfig(strings.NewReader(cfg), &s); err != nil {
		t.Fatal(err)
	}
	want := settings{port: 21810, host: "127.0.0.1", tick: 500 * time.Millisecond, dataDir: "/tmp/zk data",
		minSession: time.Second, extendedTypes: true, superDigest: "super:D/InIHSb7yEEbrWz8b9l71RjZJU="}
	got := s
	got.notes = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("settings\n%+v, want\n%+v", got, want)
	}
	notes := strings.Join(s.notes, "\n")
	for _, w := range []string{"server.1=", "server.2=", "standalone", "initLimit", "syncLimit", "maxClientCnxns",
		"admin.enableServer", "4lw.commands.whitelist", "reconfigEnabled", "zookeeper.someFutureKey"} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes do not mention %q:\n%s", w, notes)
		}
	}
	if err := s.check(); err != nil {
		t.Error(err)
	}
}

// What cannot be served is refused with an error naming the key.
func TestConfigRefusals(t *testing.T) {
	for _, tc := range []struct{ cfg, says string }{
		{"clientPort=http", "clientPort"},
		{"clientPort=70000", "clientPort"},
		{"tickTime=0", "tickTime"},
		{"secureClientPort=2281", "secureClientPort"},
		{"DigestAuthenticationProvider.superDigest=nocolon", "superDigest"},
		{"authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider", "authProvider.sasl"},
		{"minSessionTimeout=x", "minSessionTimeout"},
	} {
		s := defaults()
		err := parseConfig(strings.NewReader(tc.cfg), &s)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%q: %v, want an error naming %s", tc.cfg, err, tc.says)
		}
	}
	s := defaults()
	if err := parseConfig(strings.NewReader("tickTime=100\nminSessionTimeout=5000"), &s); err != nil {
		t.Fatal(err)
	}
	if err := s.check(); err == nil || !strings.Contains(err.Error(), "maxSessionTimeout") {
		t.Errorf("minimum above the default maximum (20 ticks): %v, want refused", err)
	}
}

// Properties (-prop, from the JVM's -D options) set what zoo.cfg keys do,
// and the container manager's and jute's knobs.
func TestProperties(t *testing.T) {
	s := defaults()
	for _, p := range [][2]string{
		{"zookeeper.extendedTypesEnabled", "true"},
		{"zookeeper.DigestAuthenticationProvider.superDigest", "super:x"},
		{"jute.maxbuffer", "2000000"},
		{"znode.container.checkIntervalMs", "100"},
		{"znode.container.maxPerMinute", "60"},
		{"znode.container.maxNeverUsedIntervalMs", "1000"},
		{"zookeeper.emulate353TTLNodes", "true"},
		{"java.net.preferIPv4Stack", "true"},
	} {
		if err := s.setProperty(p[0], p[1]); err != nil {
			t.Fatalf("%s: %v", p[0], err)
		}
	}
	if !s.extendedTypes || s.superDigest != "super:x" || s.juteMaxBuffer != 2000000 ||
		s.containerCheck != 100*time.Millisecond || s.containerMaxPerMinute != 60 || s.containerMaxNeverUsed != time.Second {
		t.Errorf("settings %+v", s)
	}
	if notes := strings.Join(s.notes, "\n"); !strings.Contains(notes, "emulate353TTLNodes") || !strings.Contains(notes, "java.net.preferIPv4Stack") {
		t.Errorf("ignored properties not noted:\n%s", notes)
	}
}

// The command refuses what it cannot serve at start: exit status 2, a
// message naming the key, before it binds any port.
func TestCommandRefusesConfig(t *testing.T) {
	bin := filepath.Join(binDir, "fakezk")
	for _, tc := range []struct {
		cfg  string
		args []string
		says string
	}{
		{"clientPort=0\nsecureClientPort=2281\n", nil, "secureClientPort"},
		{"clientPort=0\ntickTime=100\nminSessionTimeout=5000\n", nil, "maxSessionTimeout"},
		{"clientPort=0\n", []string{"-prop", "zookeeper.DigestAuthenticationProvider.superDigest=bad"}, "superDigest"},
		{"clientPort=0\n", []string{"-tick", "-1s"}, "tickTime"},
	} {
		path := filepath.Join(t.TempDir(), "zoo.cfg")
		if err := os.WriteFile(path, []byte(tc.cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := execOut(bin, append(tc.args, path)...)
		var ee interface{ ExitCode() int }
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(out, tc.says) || strings.Contains(out, "binding to port") {
			t.Errorf("%q %v: %v, want exit status 2 naming %s before binding\n%s", tc.cfg, tc.args, err, tc.says, out)
		}
	}
}
