package fakezk

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"

	"github.com/zkflow/zkflow/task"
)

// tracer is the event log: one line per request sent, request applied,
// delivery and fault, in the order they happened. It is off unless
// Config.Trace is set (formatting costs more than an op).
//
// The lines are kept as one text, each line ended by a newline, and
// made strings only when Trace asks, hashed only when TraceHash asks: a
// traced seed writes a line for every request and delivery, and a string
// (or a formatted argument) per line was as many objects as the rest of
// the server's work.
type tracer struct {
	on   bool
	text []byte // every line, each followed by '\n'
	ends []int  // where each line ends in text (at its '\n')
}

// tracef logs a line. Its arguments are boxed before the call, trace on
// or off: the calls made at every request or session test s.trace.on
// first, and the commonest lines are written without fmt (traceSend,
// traceApply, traceDeliver).
func (s *Server) tracef(format string, args ...any) {
	if !s.trace.on {
		return
	}
	s.traceEnd(fmt.Appendf(s.traceStart(), format, args...))
}

// traceStart begins a line: it returns the log's text with the line's
// time, in milliseconds since the epoch, and a space appended. The
// caller appends the rest and hands it to traceEnd.
func (s *Server) traceStart() []byte {
	b := strconv.AppendInt(s.trace.text, s.clock.Now().Sub(Epoch).Milliseconds(), 10)
	return append(b, ' ')
}

// traceEnd ends the line traceStart began in b.
func (s *Server) traceEnd(b []byte) {
	s.trace.ends = append(s.trace.ends, len(b))
	s.trace.text = append(b, '\n')
}

// appendConn appends "c<num> " and what, the start of a line about c.
func appendConn(b []byte, c *Conn, what string) []byte {
	b = append(b, 'c')
	b = strconv.AppendInt(b, int64(c.num), 10)
	b = append(b, ' ')
	return append(b, what...)
}

// traceSend logs "c%d send #%d %s" with the request described.
func (s *Server) traceSend(c *Conn, p *pending) {
	if s.trace.on {
		b := appendConn(s.traceStart(), c, "send #")
		b = strconv.AppendUint(b, p.id, 10)
		b = append(b, ' ')
		s.traceEnd(appendDescribe(b, p.req))
	}
}

// traceApply logs "c%d apply #%d %s -> %s zxid=%d" with the response
// described.
func (s *Server) traceApply(c *Conn, p *pending, r *task.Response) {
	if s.trace.on {
		b := appendConn(s.traceStart(), c, "apply #")
		b = strconv.AppendUint(b, p.id, 10)
		b = append(b, ' ')
		b = append(b, p.req.OpName()...)
		b = append(b, " -> "...)
		b = appendResp(b, r)
		b = append(b, " zxid="...)
		s.traceEnd(strconv.AppendInt(b, s.zxid, 10))
	}
}

func (s *Server) traceDeliver(c *Conn, it *item) {
	if !s.trace.on {
		return
	}
	switch it.kind {
	case itemResp: // "c%d deliver #%d %s"
		b := appendConn(s.traceStart(), c, "deliver #")
		b = strconv.AppendUint(b, it.id, 10)
		b = append(b, ' ')
		s.traceEnd(append(b, errString(it.resp.Err)...))
	case itemWatch: // "c%d deliver watch %s %s state=%s"
		b := appendConn(s.traceStart(), c, "deliver watch ")
		b = append(b, it.ev.Type.String()...)
		b = append(b, ' ')
		b = append(b, it.ev.Path...)
		b = append(b, " state="...)
		s.traceEnd(append(b, it.ev.State.String()...))
	case itemEvent: // "c%d deliver %s"
		b := appendConn(s.traceStart(), c, "deliver ")
		s.traceEnd(append(b, it.ev.String()...))
	}
}

func describe(req task.Request) string { return string(appendDescribe(nil, req)) }

// appendDescribe appends a request's description: as fmt's
// "create %s mode=%s len=%d" writes it for a create, and so on.
func appendDescribe(b []byte, req task.Request) []byte {
	switch r := req.(type) {
	case *task.CreateRequest:
		b = append(b, "create "...)
		b = append(b, r.Path...)
		b = append(b, " mode="...)
		b = append(b, r.Mode.String()...)
		b = append(b, " len="...)
		return strconv.AppendInt(b, int64(len(r.Data)), 10)
	case *task.SetDataRequest:
		b = append(b, "set "...)
		b = append(b, r.Path...)
		b = append(b, " v="...)
		b = strconv.AppendInt(b, int64(r.Version), 10)
		b = append(b, " len="...)
		return strconv.AppendInt(b, int64(len(r.Data)), 10)
	case *task.DeleteRequest:
		b = append(b, "delete "...)
		b = append(b, r.Path...)
		b = append(b, " v="...)
		return strconv.AppendInt(b, int64(r.Version), 10)
	case *task.MultiRequest:
		b = append(b, "multi["...)
		for i, op := range r.Ops {
			if i > 0 {
				b = append(b, "; "...)
			}
			b = appendDescribe(b, op)
		}
		return append(b, ']')
	case *task.CheckRequest:
		b = append(b, "check "...)
		b = append(b, r.Path...)
		b = append(b, " v="...)
		return strconv.AppendInt(b, int64(r.Version), 10)
	}
	b = append(b, req.OpName()...)
	b = append(b, ' ')
	b = append(b, req.NodePath()...)
	if task.WatchRequested(req) {
		b = append(b, " watch"...)
	}
	return b
}

// appendResp appends a response's description: its error, or as fmt's
// "ok czxid=%d mzxid=%d pzxid=%d v=%d cv=%d n=%d" writes its Stat, then
// its path and its children if it has them.
func appendResp(b []byte, r *task.Response) []byte {
	if r.Err != nil {
		return append(b, errString(r.Err)...)
	}
	st := &r.Stat
	b = append(b, "ok czxid="...)
	b = strconv.AppendInt(b, st.Czxid, 10)
	b = append(b, " mzxid="...)
	b = strconv.AppendInt(b, st.Mzxid, 10)
	b = append(b, " pzxid="...)
	b = strconv.AppendInt(b, st.Pzxid, 10)
	b = append(b, " v="...)
	b = strconv.AppendInt(b, int64(st.Version), 10)
	b = append(b, " cv="...)
	b = strconv.AppendInt(b, int64(st.Cversion), 10)
	b = append(b, " n="...)
	b = strconv.AppendInt(b, int64(st.NumChildren), 10)
	if r.Path != "" {
		b = append(b, " path="...)
		b = append(b, r.Path...)
	}
	if r.Children != nil {
		b = append(b, " children="...)
		for i, name := range r.Children {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, name...)
		}
	}
	return b
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
	if len(s.trace.ends) == 0 {
		return nil
	}
	// One string for the whole text, the lines cut from it.
	text := string(s.trace.text)
	lines := make([]string, len(s.trace.ends))
	from := 0
	for i, end := range s.trace.ends {
		lines[i] = text[from:end]
		from = end + 1
	}
	return lines
}

// TraceHash returns a hex SHA-256 of the event log (each line followed
// by a newline): equal hashes mean the same history, line for line.
func (s *Server) TraceHash() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := sha256.Sum256(s.trace.text)
	return hex.EncodeToString(sum[:])
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
