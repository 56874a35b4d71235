package zkserver

import (
	"bufio"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/zkflow/zkflow/internal/netproxy"
)

// Partition cuts server i off from its clients, silently, as a network
// partition does; Heal undoes it. It needs Options.Proxied (it panics
// without: a test that partitions must ask for the proxies) and acts on
// the proxies in front of the server's client ports (plaintext and
// secure). What a client sees:
//
//   - On a connection open through server i: nothing more, in either
//     direction, and no FIN or RST. Requests in flight get no reply and
//     pings go unanswered until the client's own timeout gives the
//     connection up (zkadapter: two-thirds of the session timeout after
//     the last ping the server answered was sent; go-zookeeper alone:
//     after the last bytes it read; the session is then
//     task.StateSuspended). It then tries the next server of its list.
//     Bytes the client or the server wrote just before Partition may still
//     arrive; a test that needs nothing in flight does a round trip first.
//   - On a new connection to server i: the TCP connect succeeds (the proxy
//     accepts) but the server never hears of it and nothing comes back, so
//     the client's ZooKeeper handshake times out (zkadapter: the session
//     timeout divided by the number of servers, by two for one) and it
//     moves on. This is where a proxy differs from a real partition, in
//     which the connect itself would time out.
//   - With another server reachable, the client resumes its session there
//     (the same session, its ephemerals and watches kept) if it gets there
//     within the session timeout. With none (a standalone server, or every
//     server partitioned) it stays suspended, the servers hear nothing from
//     it, and they expire its session once the timeout has passed: after
//     Heal the client learns that its session expired.
//
// Only clients are cut off: server i keeps running and stays in the
// ensemble (its links to the other servers are not proxied), so it keeps
// its quorum, goes on applying writes, and answers its DirectAddr and the
// four-letter words (Mode, Srvr, WaitServing). To take a server out of
// the ensemble, Stop or Kill it. Partitioning a partitioned server does
// nothing more; Kill, Stop and Start do not change whether it is
// partitioned.
func (c *Cluster) Partition(i int) {
	for _, p := range c.proxies(i, "Partition") {
		p.Silence()
	}
}

// Heal ends server i's partition: connections made from now on pass
// again, and those the partition silenced are reset (an RST on both
// sides). A real network, healed before the client's timeout, could
// resume an old connection with its lost bytes sent again; the proxy
// cannot, so a client still waiting on one sees its connection lost at
// Heal and reconnects at once (usually to the same session). Healing a
// server that is not partitioned does nothing. Like Partition, it needs
// Options.Proxied.
func (c *Cluster) Heal(i int) {
	for _, p := range c.proxies(i, "Heal") {
		p.Open()
		p.ResetSilenced()
	}
}

// proxies are server i's proxies, or a panic naming op without them.
func (c *Cluster) proxies(i int, op string) []*netproxy.Proxy {
	s := c.servers[i]
	if s.proxy == nil {
		panic(fmt.Sprintf("zkserver: %s(%d) needs a cluster started with Options.Proxied", op, i))
	}
	if s.secureProxy != nil {
		return []*netproxy.Proxy{s.proxy, s.secureProxy}
	}
	return []*netproxy.Proxy{s.proxy}
}

// ServerOf returns the index of the server that session (a session id, as
// zkadapter.Conn.SessionID gives it) is connected to. It asks every
// running server for its connections (the four-letter word cons) and,
// when several hold one of the session (the one it left and the one it
// moved to: a server closes a connection it no longer hears from only
// after the session timeout, and a partitioned server keeps its side until
// Heal), picks the one established last. Right after Partition(i), before
// the client has given its connection up, that is still i. It returns an
// error when no server has a connection of the session, or ctx ends.
func (c *Cluster) ServerOf(ctx context.Context, session int64) (int, error) {
	best, bestEst := -1, int64(-1)
	var errs []string
	for i, s := range c.servers {
		if !s.Running() {
			continue
		}
		out, err := fourLetter(ctx, s.DirectAddr(), "cons")
		if err != nil {
			errs = append(errs, fmt.Sprintf("server %d: %v", i, err))
			continue
		}
		if est, ok := established(out, session); ok && est > bestEst {
			best, bestEst = i, est
		}
	}
	if best < 0 {
		if err := ctx.Err(); err != nil {
			return -1, fmt.Errorf("zkserver: server of session %#x: %w", session, err)
		}
		return -1, fmt.Errorf("zkserver: no server has a connection of session %#x %v", session, errs)
	}
	return best, nil
}

// established finds, in the answer to cons, the connections of session and
// returns when the latest of them was established (est, milliseconds of
// the wall clock, which the servers share), or 0 when the line has none.
// A connection's lresp would not do: a server sets it on its first answer
// after the handshake, a third of the session timeout later.
//
//	/127.0.0.1:35310[1](queued=0,recved=1,sent=1,sid=0x30000eb63810000,lop=SESS,est=1795519986883,...)
func established(cons string, session int64) (int64, bool) {
	sid := fmt.Sprintf("sid=0x%x", uint64(session))
	found, latest := false, int64(0)
	sc := bufio.NewScanner(strings.NewReader(cons))
	for sc.Scan() {
		line := sc.Text()
		from, to := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
		if from < 0 || to < from {
			continue
		}
		fields := strings.Split(line[from+1:to], ",")
		if !slices.Contains(fields, sid) {
			continue
		}
		found = true
		for _, f := range fields {
			if v, ok := strings.CutPrefix(f, "est="); ok {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > latest {
					latest = n
				}
			}
		}
	}
	return latest, found
}
