package zkadapter

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/task"
)

// NewAuthConn makes realTarget a conformance.AuthTarget: a connection
// that presents auth on every connect, through Config.Auth.
func (rt *realTarget) NewAuthConn(t testing.TB, timeout time.Duration, auth []task.AuthInfo) task.Conn {
	return rt.newConn(t, timeout, func(cfg *Config) { cfg.Auth = auth })
}
