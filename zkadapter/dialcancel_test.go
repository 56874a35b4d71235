package zkadapter

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A Connect whose context has no deadline and is canceled by the caller
// says so: the note that Config.DialTimeout bounded the wait is given
// only when DialTimeout ended it.
func TestCanceledConnectDoesNotBlameDialTimeout(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ctx       func() (context.Context, context.CancelFunc)
		cfg       Config
		want      error
		namesDial bool
	}{
		{"canceled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, Config{Servers: []string{"127.0.0.1:1"}, ConnectTimeout: 50 * time.Millisecond}, context.Canceled, false},
		{"dial timeout", func() (context.Context, context.CancelFunc) {
			return context.Background(), func() {}
		}, Config{Servers: []string{"127.0.0.1:1"}, ConnectTimeout: 50 * time.Millisecond, DialTimeout: 200 * time.Millisecond}, context.DeadlineExceeded, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			defer cancel()
			c, err := Dial(ctx, tc.cfg)
			if c != nil {
				c.Close()
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Dial = %v, want %v", err, tc.want)
			}
			if got := strings.Contains(err.Error(), "Config.DialTimeout"); got != tc.namesDial {
				t.Fatalf("Dial = %v: names Config.DialTimeout %v, want %v", err, got, tc.namesDial)
			}
		})
	}
}
