package zkadapter

import (
	"math/rand/v2"
	"sync"
)

// hostList is the zk.HostProvider of a Conn: the configured addresses in a
// shuffled order, tried round robin. It resolves nothing itself: names are
// resolved by each dial, under the dial's context, so a name that does not
// resolve is a failed connect attempt (its *net.DNSError becomes Connect's
// last error) instead of a failure of zk.Connect with no deadline, and a
// name whose addresses change is resolved again on the next attempt.
type hostList struct {
	mu      sync.Mutex
	servers []string
	curr    int
	last    int
}

func (h *hostList) Init(servers []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.servers = append([]string(nil), servers...)
	rand.Shuffle(len(h.servers), func(i, j int) { h.servers[i], h.servers[j] = h.servers[j], h.servers[i] })
	h.curr, h.last = -1, -1
	return nil
}

func (h *hostList) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

// Next returns the next address; retryStart is true when every address
// has been tried since the last successful connection (go-zookeeper then
// fails its unsent requests and waits a second).
func (h *hostList) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.servers)
	retryStart := h.curr == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.servers[h.curr], retryStart
}

func (h *hostList) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.curr
}
