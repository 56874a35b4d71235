package zkadapter_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/zkflow/zkflow/zkadapter"
)

// A misconfigured connection is refused before anything is dialed, with
// an error naming the field.
func ExampleConfig_Validate() {
	for _, cfg := range []zkadapter.Config{
		{},
		{Servers: []string{"localhost"}},
		{Servers: []string{"localhost:2181"}, ConnectTimeout: -time.Second},
	} {
		err := cfg.Validate()
		var ce *zkadapter.ConfigError
		fmt.Println(errors.Is(err, zkadapter.ErrInvalidConfig), errors.As(err, &ce) && ce.Field != "")
	}
	// Output:
	// true true
	// true true
	// true true
}

// Dial to a server that is down returns, when the context ends, an error
// that says no session was established and why.
func ExampleDial_serverDown() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	c, err := zkadapter.Dial(ctx, zkadapter.Config{Servers: []string{addr}, ConnectTimeout: 50 * time.Millisecond})
	fmt.Println(c == nil, errors.Is(err, zkadapter.ErrNoSession), errors.Is(err, context.DeadlineExceeded))
	// Output:
	// true true true
}
