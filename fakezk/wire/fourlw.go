package wire

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/zkflow/zkflow/fakezk"
)

// Four-letter words (FourLetterCommands): a connection whose first four
// bytes spell one gets a text answer and is closed. Served: ruok, isro,
// srvr, stat (with no client list, zero latency and counters), conf, envi
// and mntr (a subset of its keys: those a fake can fill, counters that it
// does not keep at 0). Others (cons, dump, wchs, ...) are not recognised:
// their four bytes read as a frame length over the limit, and the
// connection closes.

func isFourLetterWord(cmd string) bool {
	switch cmd {
	case "ruok", "srvr", "stat", "isro", "conf", "envi", "mntr":
		return true
	}
	return false
}

// fourLetterWord answers cmd. The text is raw (no frame), as the server
// writes it.
func fourLetterWord(zk *fakezk.Server, cmd string, port int) []byte {
	var b strings.Builder
	switch cmd {
	case "ruok":
		b.WriteString("imok")
	case "isro":
		b.WriteString("rw")
	case "srvr", "stat":
		z := zk.Zxid()
		fmt.Fprintf(&b, "Zookeeper version: %s\n", version)
		if cmd == "stat" {
			b.WriteString("Clients:\n\n")
		}
		b.WriteString("Latency min/avg/max: 0/0.0/0\n")
		b.WriteString("Received: 0\nSent: 0\n")
		fmt.Fprintf(&b, "Connections: %d\n", len(zk.Sessions()))
		b.WriteString("Outstanding: 0\n")
		fmt.Fprintf(&b, "Zxid: 0x%x\n", z)
		b.WriteString("Mode: standalone\n")
		fmt.Fprintf(&b, "Node count: %d\n", len(zk.Paths())+1) // DataTree counts the root twice ("" and "/")
	case "conf":
		tick := zk.TickTime()
		fmt.Fprintf(&b, "clientPort=%d\nsecureClientPort=-1\n", port)
		fmt.Fprintf(&b, "dataDir=\ndataDirSize=0\ndataLogDir=\ndataLogSize=0\n")
		fmt.Fprintf(&b, "tickTime=%d\nmaxClientCnxns=0\n", tick.Milliseconds())
		lo, hi := zk.SessionTimeoutBounds()
		fmt.Fprintf(&b, "minSessionTimeout=%d\nmaxSessionTimeout=%d\n", lo.Milliseconds(), hi.Milliseconds())
		fmt.Fprintf(&b, "clientPortListenBacklog=-1\nserverId=0\n")
	case "envi":
		fmt.Fprintf(&b, "Environment:\nzookeeper.version=%s\nhost.name=localhost\n", version)
		fmt.Fprintf(&b, "java.version=fakezk\nos.name=%s\nos.arch=%s\n", runtime.GOOS, runtime.GOARCH)
	case "mntr":
		for _, kv := range [][2]string{
			{"zk_version", version},
			{"zk_server_state", "standalone"},
			{"zk_num_alive_connections", fmt.Sprint(len(zk.Sessions()))},
			{"zk_outstanding_requests", "0"},
			{"zk_znode_count", fmt.Sprint(len(zk.Paths()) + 1)},
			{"zk_avg_latency", "0.0"},
			{"zk_min_latency", "0"},
			{"zk_max_latency", "0"},
			{"zk_packets_received", "0"},
			{"zk_packets_sent", "0"},
		} {
			fmt.Fprintf(&b, "%s\t%s\n", kv[0], kv[1])
		}
	}
	return []byte(b.String())
}

// version is what the fake reports as its ZooKeeper version, in the
// server's format ("3.8.0-<commit>, built on <date>").
const version = "3.8.0-fakezk, built on 01/01/2026 00:00 GMT"
