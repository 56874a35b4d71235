package target

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
)

// Main is an example's main: it calls run with the command line and
// standard output, and exits 1, naming the example, if run fails.
func Main(name string, run func(ctx context.Context, args []string, out io.Writer) error) {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// FlagSet returns the example's flag set, printing usage and errors to out
// and returning them from Parse, with -zk and -seed registered into t.
func (t *Target) FlagSet(name string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	t.Register(fs)
	return fs
}
