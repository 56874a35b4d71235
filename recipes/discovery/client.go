package discovery

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/task"
)

// Client is the blocking, context-first API over a Discovery: its methods
// are safe from any goroutine and need someone running the executor
// (executor.Run). When ctx ends first, a call's flow is canceled and the
// call returns task.ErrCanceled or task.ErrDeadlineExceeded (matching
// context.Canceled and context.DeadlineExceeded under errors.Is).
//
// A nil or zero Client (not made by NewClient) fails every call with an
// error wrapping task.ErrInvalidArgument.
type Client struct {
	ex *executor.Executor
	d  *Discovery
	// pending counts the Unregisters of Static and Permanent instances
	// of this Client going on in the background, and the unregistering
	// of registrations made as a Register's ctx ended (undo): Register
	// waits for them (see Register). A Dynamic instance's Unregister is
	// not counted: a Register of its id waits for its node to go
	// (group.Group.Join), and one of another id has nothing to wait for.
	pending blocking.Pending
	// register is what Register is, for its errors ("discovery <base>:
	// register"), made once.
	register string
}

// NewClient returns a Client of the discovery under base whose flows run
// on ex, with the options of New.
func NewClient(ex *executor.Executor, base string, opts ...Option) (*Client, error) {
	if ex == nil {
		return nil, fmt.Errorf("discovery: nil executor: %w", task.ErrInvalidArgument)
	}
	d, err := New(base, opts...)
	if err != nil {
		return nil, err
	}
	return &Client{ex: ex, d: d, register: "discovery " + d.Base() + ": register"}, nil
}

// Discovery is the discovery the Client runs (nil for a nil or zero
// Client).
func (c *Client) Discovery() *Discovery {
	if c == nil {
		return nil
	}
	return c.d
}

// zero reports a nil or zero Client (not made by NewClient): its calls
// fail with errZero("Client").
func (c *Client) zero() bool { return c == nil || c.ex == nil || c.d == nil }

// again runs once until it fails with anything but a session expiry (the
// flow was bound to a session that ended before it finished), or ctx
// ends.
func again[T any](ctx context.Context, once func() (T, error)) (T, error) {
	for {
		v, err := once()
		if errors.Is(err, task.ErrSessionExpired) && ctx.Err() == nil {
			continue
		}
		return v, err
	}
}

// Register registers inst (Discovery.Register). If the session expires
// meanwhile it registers again on the next session. If ctx ends first, a
// Dynamic instance's node the flow made is deleted, and one registered
// just as ctx ended is unregistered. A Static or Permanent instance's
// node (persistent) may stay, created or its data replaced by a create
// that was in flight: to be sure it is gone, Register it again and
// Unregister it. Register first waits, within ctx, for the unregistering
// this Client has going on in the background: every Unregister of a
// Static or Permanent instance (one whose ctx ended first), and that of
// every registration made just as its Register's ctx ended, whatever
// its type. A Static or Permanent instance's Register then waits for
// every Unregister of the same instance going on on the executor,
// whoever runs it (any Client, the task face; Discovery.Register): such
// a delete, sent after Register found the node or retried after a lost
// reply, would otherwise delete the node Register has just made or kept,
// after Register returned. A Dynamic instance's Register waits until
// the node of an earlier registration of its id is gone, as
// Discovery.Register says (an Unregister of it still going on, in the
// background or refused by an ACL, included). With ctx ended already it
// returns ctx's error at once, without waiting for anything, and submits
// nothing.
func (c *Client) Register(ctx context.Context, inst Instance) (*Registration, error) {
	if c.zero() {
		return nil, errZero("Client")
	}
	if !canary.On(bugRegisterBehindUnregister) {
		if ctx != nil && ctx.Err() != nil {
			// Ended already: nothing to wait for, nothing is submitted
			// (blocking.Take), and the call does not block.
			return nil, blocking.CtxErr(ctx, c.register)
		}
		if err := c.pending.Wait(ctx, c.register); err != nil {
			return nil, err
		}
	}
	return again(ctx, func() (*Registration, error) {
		return blocking.Take(ctx, c.register, c.ex, c.d.Register(inst), nil, c.undo)
	})
}

// undo unregisters r, registered just as the caller's ctx ended, in the
// background: counted in pending and, for a Static or Permanent
// instance, on the executor (the next Register waits for it, or its
// delete, retried after a lost reply, could delete the node that Register
// makes), and across an expiry for a Static or Permanent instance, as
// Unregister.
func (c *Client) undo(r *Registration) {
	if canary.On(bugRegisterBehindUnregister) {
		executor.Submit(c.ex, r.Unregister(), nil)
		return
	}
	if r.m != nil {
		blocking.Background(c.ex, &c.pending, r.Unregister())
		return
	}
	blocking.BackgroundAcrossExpiry(c.ex, &c.pending, r.unregister(true))
}

// Unregister ends r and deletes its node (Registration.Unregister: a
// Static or Permanent instance's node only while it is the one Register
// made or kept, not one made again at its path since); r must have been
// registered on this Client's executor (any Client or task on it), or
// Unregister does nothing and returns an error wrapping
// task.ErrInvalidArgument. It is started whatever ctx: if ctx has ended,
// or ends before the delete is done, Unregister returns its error and the
// delete goes on in the background (a Register of the same instance on
// the executor waits for it). A Static or Permanent instance's node (persistent) is
// deleted again on the next session if the session expires first,
// whether or not the caller still waits. A delete an ACL refuses makes
// Unregister return task.ErrNoAuth at once, and goes on in the
// background until the ACL lets it (Registration.Unregister).
func (c *Client) Unregister(ctx context.Context, r *Registration) error {
	if c.zero() {
		return errZero("Client")
	}
	if r.zero() {
		return errZero("Registration")
	}
	if r.rt != task.Runtime(c.ex) {
		return errNotOurs
	}
	what := "discovery " + c.d.Base() + ": unregister"
	if r.m != nil { // Dynamic: an ephemeral node, which the session's end deletes
		_, err := blocking.Give(ctx, what, c.ex, nil, r.Unregister())
		return err
	}
	_, err := blocking.GiveAcrossExpiry(ctx, what, c.ex, &c.pending, r.unregister(true))
	return err
}

// bugRegisterBehindUnregister: Register does not wait for the Client's
// background Unregisters of Static and Permanent instances, nor for the
// Unregisters of the same instance going on on the executor (nor counts
// the undo of a Register whose ctx ended), one of which may delete the
// node Register has just made.
const bugRegisterBehindUnregister canary.Name = "discovery/register-behind-unregister"

// Names lists the services under the base path (Discovery.Names).
func (c *Client) Names(ctx context.Context) ([]string, error) {
	if c.zero() {
		return nil, errZero("Client")
	}
	return again(ctx, func() ([]string, error) {
		return blocking.Await(ctx, "discovery "+c.d.Base()+": names", c.ex, c.d.Names())
	})
}

// Query reads the instances of service name once (Discovery.Query).
func (c *Client) Query(ctx context.Context, name string) ([]Instance, error) {
	if c.zero() {
		return nil, errZero("Client")
	}
	return again(ctx, func() ([]Instance, error) {
		return blocking.Await(ctx, "discovery "+c.d.Base()+": query "+name, c.ex, c.d.Query(name))
	})
}

// StartCache starts a cache of service name's instances (Discovery.NewCache,
// Cache.Start) and returns once they have all been read. Stop it with
// ServiceCache.Stop.
func (c *Client) StartCache(ctx context.Context, name string) (*ServiceCache, error) {
	if c.zero() {
		return nil, errZero("Client")
	}
	return again(ctx, func() (*ServiceCache, error) {
		cc, err := c.d.NewCache(name)
		if err != nil {
			return nil, err
		}
		if _, err := blocking.Take(ctx, "discovery "+c.d.Base()+": start cache", c.ex, cc.Start(), nil, func(cc *Cache) { executor.Submit(c.ex, cc.Stop(), nil) }); err != nil {
			return nil, err
		}
		return &ServiceCache{ex: c.ex, c: cc}, nil
	})
}

// ServiceCache is the blocking face of a running Cache. Safe from any
// goroutine. A nil or zero ServiceCache (not made by StartCache) has no
// cache and no instances; its Next, Provider and Stop fail with an error
// wrapping task.ErrInvalidArgument.
type ServiceCache struct {
	ex *executor.Executor
	c  *Cache
}

// Cache is the task face of the cache.
func (s *ServiceCache) Cache() *Cache {
	if s == nil {
		return nil
	}
	return s.c
}

// Instances returns the cached instances (Cache.Instances).
func (s *ServiceCache) Instances() []Instance {
	if s == nil {
		return nil
	}
	return s.c.Instances()
}

// Next waits until the service's nodes differ from those at the previous
// Next and returns the instances now (Cache.Next: changes coalesce, and an
// answer may list the same instances as the one before when only a node
// that is not an instance changed, or an instance's node was made again
// with the same data), or ctx's error (then the
// next Next returns what this one would have, also when ctx ended just as
// the instances were handed over). An expiry of the session does not end
// the wait: the cache follows the new session, and so does Next. The
// instances' Payload and URISpec are shared, as Cache.Next's: do not
// modify them.
func (s *ServiceCache) Next(ctx context.Context) ([]Instance, error) {
	if s == nil || s.c == nil {
		return nil, errZero("ServiceCache")
	}
	return again(ctx, func() ([]Instance, error) {
		return s.c.awaitNext(ctx, s.ex)
	})
}

// Provider returns a provider over the cache's instances, timing the
// down-instance policy on the executor's clock. Once the cache has ended,
// its Get fails with an error wrapping the cache's Err.
func (s *ServiceCache) Provider(opts ...ProviderOption) (*Provider, error) {
	if s == nil || s.c == nil {
		return nil, errZero("ServiceCache")
	}
	return s.c.Provider(s.ex.Clock(), opts...)
}

// Stop stops the cache. It is started whatever ctx; it returns once the
// cache has stopped, or ctx's error (the stop goes on in the background).
func (s *ServiceCache) Stop(ctx context.Context) error {
	if s == nil || s.c == nil {
		return errZero("ServiceCache")
	}
	_, err := blocking.Give(ctx, "discovery cache: stop", s.ex, nil, s.c.Stop())
	if errors.Is(err, task.ErrClosed) {
		return nil
	}
	return err
}
