package discovery

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/zkflow/zkflow/task"
)

// ErrNoInstance is Provider.Get's error when no instance is up.
var ErrNoInstance = errors.New("discovery: no instance")

// Strategy picks an instance among those up (Curator's ProviderStrategy).
type Strategy int

// The strategies of Curator's discovery.
const (
	// RoundRobin takes the instances in turn, in the order its source
	// lists them (a cache's: by node name).
	RoundRobin Strategy = iota
	// Random takes one at random.
	Random
	// Sticky keeps returning the instance it chose until that one is no
	// longer up, then chooses again round-robin.
	Sticky
)

// providerOptions is what the ProviderOption values set.
type providerOptions struct {
	Strategy      Strategy
	DownThreshold int
	DownTimeout   time.Duration
	Rand          func(n int) int
}

// ProviderOption configures a Provider (NewProvider,
// ServiceCache.Provider). Without any, a Provider is Curator's default:
// round-robin, and an instance reported failing twice is down for 30
// seconds.
type ProviderOption interface{ applyProvider(*providerOptions) }

type providerOptionFunc func(*providerOptions)

func (f providerOptionFunc) applyProvider(o *providerOptions) { f(o) }

// WithStrategy sets how the Provider picks an instance (default
// RoundRobin).
func WithStrategy(s Strategy) ProviderOption {
	return providerOptionFunc(func(o *providerOptions) { o.Strategy = s })
}

// WithDownThreshold sets how many NoteError reports make an instance down
// (Curator's DownInstancePolicy errorThreshold; 0 means 2).
func WithDownThreshold(n int) ProviderOption {
	return providerOptionFunc(func(o *providerOptions) { o.DownThreshold = n })
}

// WithDownTimeout sets how long an instance stays down, counted from its
// first report (Curator's DownInstancePolicy timeout; 0 means 30s).
func WithDownTimeout(d time.Duration) ProviderOption {
	return providerOptionFunc(func(o *providerOptions) { o.DownTimeout = d })
}

// WithRand sets what draws the Random strategy's choice in [0, n) (nil:
// math/rand/v2); a draw outside it makes Get fail with an error wrapping
// task.ErrInvalidArgument.
func WithRand(fn func(n int) int) ProviderOption {
	return providerOptionFunc(func(o *providerOptions) { o.Rand = fn })
}

// Provider hands out instances of a service from a source (a Cache's
// Instances, or the result of a Query), skipping disabled instances and
// those reported down. Safe from any goroutine. A nil or zero Provider
// (not made by NewProvider) fails Get with an error wrapping
// task.ErrInvalidArgument; its NoteError does nothing.
type Provider struct {
	src   func() []Instance
	ended func() error // nil, or why src's cache ended (ServiceCache.Provider)
	clock task.Clock
	opts  providerOptions

	mu     sync.Mutex
	next   int
	sticky string
	down   map[string]*downStatus // by instance id
}

type downStatus struct {
	since  time.Time
	errors int
}

// NewProvider returns a provider over src, which it calls on every Get
// (the result of a Query, say; over a Cache, Cache.Provider also fails
// once the cache has ended, where Instances keeps its last snapshot);
// clock times the down-instance policy (an executor's Clock). A nil src, clock or option, an unknown strategy, or
// a negative threshold or timeout, fails with an error wrapping
// task.ErrInvalidArgument.
func NewProvider(src func() []Instance, clock task.Clock, options ...ProviderOption) (*Provider, error) {
	if src == nil || clock == nil {
		return nil, fmt.Errorf("discovery: provider needs a source and a clock: %w", task.ErrInvalidArgument)
	}
	var opts providerOptions
	for _, o := range options {
		if o == nil {
			return nil, fmt.Errorf("discovery: nil provider option: %w", task.ErrInvalidArgument)
		}
		o.applyProvider(&opts)
	}
	if opts.DownThreshold < 0 || opts.DownTimeout < 0 || opts.Strategy < RoundRobin || opts.Strategy > Sticky {
		return nil, fmt.Errorf("discovery: provider strategy %d, down threshold %d, down timeout %v: %w",
			opts.Strategy, opts.DownThreshold, opts.DownTimeout, task.ErrInvalidArgument)
	}
	if opts.DownThreshold == 0 {
		opts.DownThreshold = 2
	}
	if opts.DownTimeout == 0 {
		opts.DownTimeout = 30 * time.Second
	}
	if opts.Rand == nil {
		opts.Rand = rand.IntN
	}
	return &Provider{src: src, clock: clock, opts: opts, down: map[string]*downStatus{}}, nil
}

// Get returns an instance by the provider's strategy among the enabled
// instances not down, or ErrNoInstance if there is none (an error wrapping
// task.ErrInvalidArgument if WithRand's function draws out of range). A
// provider of a Cache (Cache.Provider, ServiceCache.Provider) that has
// ended (stopped, or an error it could not get past, such as an ACL that
// refuses it) fails with an error wrapping the cache's Err: its
// instances are no longer followed. The instance is the caller's to
// modify (its Payload and URISpec copied).
func (p *Provider) Get() (Instance, error) {
	in, err := p.get()
	if err != nil {
		return Instance{}, err
	}
	return in.own(), nil
}

// get is Get, the instance shared with src's.
func (p *Provider) get() (Instance, error) {
	if p == nil || p.src == nil {
		return Instance{}, errZero("Provider")
	}
	if p.ended != nil {
		if err := p.ended(); err != nil {
			return Instance{}, fmt.Errorf("discovery: the provider's cache has ended: %w", err)
		}
	}
	all := p.src()
	p.mu.Lock()
	defer p.mu.Unlock()
	up := all
	if len(p.down) > 0 {
		p.purge()
	}
	if len(p.down) > 0 || slices.ContainsFunc(all, func(in Instance) bool { return in.Disabled }) {
		up = make([]Instance, 0, len(all))
		for _, in := range all {
			if st := p.down[in.ID]; !in.Disabled && (st == nil || st.errors < p.opts.DownThreshold) {
				up = append(up, in)
			}
		}
	}
	if len(up) == 0 {
		return Instance{}, ErrNoInstance
	}
	switch p.opts.Strategy {
	case Random:
		i := p.opts.Rand(len(up))
		if i < 0 || i >= len(up) {
			return Instance{}, fmt.Errorf("discovery: provider's Rand drew %d, not in [0, %d): %w", i, len(up), task.ErrInvalidArgument)
		}
		return up[i], nil
	case Sticky:
		for _, in := range up {
			if in.ID == p.sticky {
				return in, nil
			}
		}
		in := p.roundRobin(up)
		p.sticky = in.ID
		return in, nil
	default:
		return p.roundRobin(up), nil
	}
}

func (p *Provider) roundRobin(up []Instance) Instance {
	in := up[p.next%len(up)]
	p.next = (p.next + 1) % len(up)
	return in
}

// NoteError reports that in failed: once reported DownThreshold times
// within DownTimeout of the first report, Get skips it until DownTimeout
// has passed since that first report.
func (p *Provider) NoteError(in Instance) {
	if p == nil || p.src == nil {
		return // a nil or zero Provider (not made by NewProvider): Get fails
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.purge()
	st := p.down[in.ID]
	if st == nil {
		st = &downStatus{since: p.clock.Now()}
		p.down[in.ID] = st
	}
	st.errors++
}

// purge forgets the reports older than the timeout. Under p.mu.
func (p *Provider) purge() {
	now := p.clock.Now()
	for id, st := range p.down {
		if now.Sub(st.since) >= p.opts.DownTimeout {
			delete(p.down, id)
		}
	}
}
