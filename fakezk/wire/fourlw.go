package wire

import (
	"fmt"
	"strings"

	"github.com/zkflow/zkflow/fakezk"
)

// Four-letter words (FourLetterCommands): a connection whose first four
// bytes spell one gets a text answer and is closed. Served: ruok, isro,
// srvr, stat (with no client list, zero latency and counters). Others
// (conf, envi, mntr, cons, ...) are not recognised: their four bytes read
// as a frame length over the limit, and the connection closes.

func isFourLetterWord(cmd string) bool {
	switch cmd {
	case "ruok", "srvr", "stat", "isro":
		return true
	}
	return false
}

// fourLetterWord answers cmd. The text is raw (no frame), as the server
// writes it.
func fourLetterWord(zk *fakezk.Server, cmd string) []byte {
	var b strings.Builder
	switch cmd {
	case "ruok":
		b.WriteString("imok")
	case "isro":
		b.WriteString("rw")
	case "srvr", "stat":
		z := zk.Zxid()
		fmt.Fprintf(&b, "Zookeeper version: 3.8.0-fakezk, built on 01/01/2026 00:00 GMT\n")
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
	}
	return []byte(b.String())
}
