package zkadapter

import (
	"reflect"
	"testing"
	"time"

	"github.com/zkflow/zkflow/task"
)

// NewAuthConn makes realTarget a conformance.AuthTarget: a connection
// that presents auth on every connect, through Config.Auth.
//
// Config.Auth comes with the change that teaches the Conn to
// authenticate. Until it has landed this sets the field by name and skips
// the case when there is none; once it has, the body is
// cfg.Auth = auth, with no reflection.
func (rt *realTarget) NewAuthConn(t testing.TB, timeout time.Duration, auth []task.AuthInfo) task.Conn {
	return rt.newConn(t, timeout, func(cfg *Config) {
		f := reflect.ValueOf(cfg).Elem().FieldByName("Auth")
		if !f.IsValid() || f.Type() != reflect.TypeOf(auth) {
			t.Skip("zkadapter.Config has no Auth []task.AuthInfo field yet: no authenticated sessions")
		}
		f.Set(reflect.ValueOf(auth))
	})
}
