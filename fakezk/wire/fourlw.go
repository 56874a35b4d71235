package wire

import (
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/zkflow/zkflow/fakezk"
)

// Four-letter words (FourLetterCommands): a connection whose first four
// bytes spell one gets a text answer and is closed. Served: ruok, isro,
// srvr, stat (with no client list, zero latency and counters), conf, envi,
// mntr (a subset of its keys: those a fake can fill, counters that it
// does not keep at 0) and cons (each connection with its counts, session,
// last operation, cxid and zxid; latencies 0). Others (dump, wchs, ...)
// are not recognised:
// their four bytes read as a frame length over the limit, and the
// connection closes.

func isFourLetterWord(cmd string) bool {
	switch cmd {
	case "ruok", "srvr", "stat", "isro", "conf", "envi", "mntr", "cons":
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

// cons lists the server's connections as ServerCnxn.dumpConnectionInfo
// writes them, one line each and an empty line after them: the asking
// connection (no session yet) in the brief form.
func (s *Server) cons() []byte {
	s.mu.Lock()
	links := make([]*link, 0, len(s.links))
	for lk := range s.links {
		links = append(links, lk)
	}
	s.mu.Unlock()
	type row struct {
		sid  int64
		line string
	}
	rows := make([]row, 0, len(links))
	for _, lk := range links {
		lk.mu.Lock()
		st, fz, to := lk.st, lk.fz, lk.timeout
		lk.mu.Unlock()
		var b strings.Builder
		fmt.Fprintf(&b, " /%s[", lk.nc.RemoteAddr())
		var sid int64
		if fz != nil {
			sid = fz.Conn().SessionID()
		}
		if sid == 0 {
			fmt.Fprintf(&b, "0](queued=0,recved=%d,sent=%d)", st.recved, st.sent)
		} else {
			fmt.Fprintf(&b, "1](queued=0,recved=%d,sent=%d,sid=0x%x,lop=%s,est=%d,to=%d", st.recved, st.sent, sid, st.lop, st.est, to.Milliseconds())
			if st.lcxid >= 0 {
				fmt.Fprintf(&b, ",lcxid=0x%x", st.lcxid)
			}
			fmt.Fprintf(&b, ",lzxid=0x%x,lresp=%d,llat=0,minlat=0,avglat=0,maxlat=0)", uint64(st.lzxid), st.lresp)
		}
		rows = append(rows, row{sid, b.String()})
	}
	slices.SortFunc(rows, func(a, b row) int { return strings.Compare(a.line, b.line) })
	var out strings.Builder
	for _, r := range rows {
		out.WriteString(r.line)
		out.WriteString("\n")
	}
	out.WriteString("\n")
	return []byte(out.String())
}

// lastOp is the name a 3.8 server gives op in cons (FinalRequestProcessor).
func lastOp(op Op) string {
	switch op {
	case OpPing:
		return "PING"
	case OpMulti:
		return "MULT"
	case OpMultiRead:
		return "MLTR"
	case OpCreate, OpCreate2, OpCreateTTL, OpCreateContainer:
		return "CREA"
	case OpDelete, OpDeleteContainer:
		return "DELE"
	case OpSetData:
		return "SETD"
	case OpReconfig:
		return "RECO"
	case OpSetACL:
		return "SETA"
	case OpCloseSession:
		return "CLOS"
	case OpSync:
		return "SYNC"
	case OpCheck:
		return "CHEC"
	case OpExists:
		return "EXIS"
	case OpGetData:
		return "GETD"
	case OpSetWatches:
		return "SETW"
	case OpSetWatches2:
		return "STW2"
	case OpAddWatch:
		return "ADDW"
	case OpGetACL:
		return "GETA"
	case OpGetChildren, OpGetChildren2:
		return "GETC"
	case OpAllChildrenCount:
		return "GETACN"
	case OpCheckWatches:
		return "CHKW"
	case OpRemoveWatches:
		return "REMW"
	case OpWhoAmI:
		return "HOMI"
	case OpGetEphemerals:
		return "GETE"
	}
	return "NA"
}
