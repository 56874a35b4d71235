package main

import (
	"fmt"
	"io"
	"sync"
)

// Checks collects the example's verified facts and failures for its
// summary. It is safe from several goroutines.
type Checks struct {
	mu         sync.Mutex
	ok, failed []string
}

// Check records the fact format describes: verified if ok, else failed.
func (c *Checks) Check(ok bool, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	c.mu.Lock()
	defer c.mu.Unlock()
	if ok {
		c.ok = append(c.ok, line)
	} else {
		c.failed = append(c.failed, line)
	}
}

// Report prints "  ok: " before each verified fact, then "  FAILED: "
// before each failure, and returns an error counting the failures. The
// run's last line, OK, is cleanUp's, once the run's nodes are deleted.
func (c *Checks) Report(out io.Writer) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.ok {
		fmt.Fprintf(out, "  ok: %s\n", s)
	}
	for _, f := range c.failed {
		fmt.Fprintf(out, "  FAILED: %s\n", f)
	}
	if len(c.failed) > 0 {
		return fmt.Errorf("%d checks failed", len(c.failed))
	}
	return nil
}
