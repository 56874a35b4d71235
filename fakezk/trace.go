package fakezk

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"slices"
	"strings"

	"github.com/zkflow/zkflow/task"
)

// tracer is the event log: one line per request sent, request applied,
// delivery and fault, in the order they happened, with a running hash.
// It is off unless Config.Trace is set (formatting costs more than an op).
type tracer struct {
	on    bool
	lines []string
	h     hash.Hash
}

// tracef logs a line. Its arguments are boxed before the call, trace on
// or off: the calls made at every request or session test s.trace.on
// first.
func (s *Server) tracef(format string, args ...any) {
	if !s.trace.on {
		return
	}
	line := fmt.Sprintf("%d ", s.clock.Now().Sub(Epoch).Milliseconds()) + fmt.Sprintf(format, args...)
	if s.trace.h == nil {
		s.trace.h = sha256.New()
	}
	s.trace.lines = append(s.trace.lines, line)
	io.WriteString(s.trace.h, line)
	s.trace.h.Write([]byte{'\n'})
}

func (s *Server) traceSend(c *Conn, p *pending) {
	if s.trace.on {
		s.tracef("c%d send #%d %s", c.num, p.id, describe(p.req))
	}
}

func (s *Server) traceApply(c *Conn, p *pending, r *task.Response) {
	if s.trace.on {
		s.tracef("c%d apply #%d %s -> %s zxid=%d", c.num, p.id, p.req.OpName(), describeResp(r), s.zxid)
	}
}

func (s *Server) traceDeliver(c *Conn, it *item) {
	if !s.trace.on {
		return
	}
	switch it.kind {
	case itemResp:
		s.tracef("c%d deliver #%d %s", c.num, it.id, errString(it.resp.Err))
	case itemWatch:
		s.tracef("c%d deliver watch %s %s state=%s", c.num, it.ev.Type, it.ev.Path, it.ev.State)
	case itemEvent:
		s.tracef("c%d deliver %s", c.num, it.ev)
	}
}

func describe(req task.Request) string {
	switch r := req.(type) {
	case *task.CreateRequest:
		return fmt.Sprintf("create %s mode=%s len=%d", r.Path, r.Mode, len(r.Data))
	case *task.SetDataRequest:
		return fmt.Sprintf("set %s v=%d len=%d", r.Path, r.Version, len(r.Data))
	case *task.DeleteRequest:
		return fmt.Sprintf("delete %s v=%d", r.Path, r.Version)
	case *task.MultiRequest:
		parts := make([]string, len(r.Ops))
		for i, op := range r.Ops {
			parts[i] = describe(op)
		}
		return "multi[" + strings.Join(parts, "; ") + "]"
	case *task.CheckRequest:
		return fmt.Sprintf("check %s v=%d", r.Path, r.Version)
	}
	w := ""
	if task.WatchRequested(req) {
		w = " watch"
	}
	return req.OpName() + " " + req.NodePath() + w
}

func describeResp(r *task.Response) string {
	if r.Err != nil {
		return errString(r.Err)
	}
	st := r.Stat
	out := fmt.Sprintf("ok czxid=%d mzxid=%d pzxid=%d v=%d cv=%d n=%d", st.Czxid, st.Mzxid, st.Pzxid, st.Version, st.Cversion, st.NumChildren)
	if r.Path != "" {
		out += " path=" + r.Path
	}
	if r.Children != nil {
		out += " children=" + strings.Join(r.Children, ",")
	}
	return out
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// Trace returns a copy of the event log (empty unless Config.Trace).
func (s *Server) Trace() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.trace.lines)
}

// TraceHash returns a hex SHA-256 of the event log: equal hashes mean the
// same history, line for line.
func (s *Server) TraceHash() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.trace.h == nil {
		return hex.EncodeToString(sha256.New().Sum(nil))
	}
	return hex.EncodeToString(s.trace.h.Sum(nil))
}

// WriteTrace prints the event log, one line per event.
func (s *Server) WriteTrace(w io.Writer) error {
	for _, l := range s.Trace() {
		if _, err := io.WriteString(w, l+"\n"); err != nil {
			return err
		}
	}
	return nil
}
