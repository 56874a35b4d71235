// Package discovery is service discovery on ZooKeeper in Apache Curator's
// layout (curator-x-discovery 5.x): services register instances, clients
// find them once or follow them with a cache, and a provider picks one
// (round-robin, random or sticky), skipping instances reported failing.
// A Curator ServiceDiscovery and this package see each other's instances
// on one base path: the nodes are BASE/<service>/<instance id>, each the
// JSON of Curator's ServiceInstance (Instance), tested against Curator's
// own jars on a real server.
//
// Guarantees. A dynamic instance (the default) is an ephemeral node that
// stays registered until Unregister: registered again on every new
// session after an expiry, and again if someone deletes it (as
// recipes/group's members are). A Cache follows the service across
// reconnects and expiries (recipes/cache) and converges after every
// fault: once the registrations stop changing and its session is
// connected, it lists exactly the instances on the server, so never one
// whose session ended. Nodes whose data is not an instance are left out.
// A Static or Permanent instance is a persistent node, written once:
// processes that register one such id share that node, and an
// Unregister deletes only the node its Register made or kept, never one
// made again at the path after it was gone (but in ZooKeeper's window
// between a read and a delete: PROTOCOL.md).
//
//	c, err := discovery.NewClient(ex, "/services")
//	reg, err := c.Register(ctx, discovery.Instance{Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 8080})
//	defer c.Unregister(ctx, reg)
//
//	cache, err := c.StartCache(ctx, "web") // returns once every instance is read
//	defer cache.Stop(ctx)
//	p, err := cache.Provider(discovery.WithStrategy(discovery.RoundRobin))
//	in, err := p.Get() // ErrNoInstance when none is up
//	if callFails(in) {
//		p.NoteError(in) // down for DownTimeout once reported DownThreshold times
//	}
//
// Payloads are JSON: Instance.Payload holds it raw, Payload[T] and
// WithPayload type it. To have a Curator reader decode it as a Java
// class, set Instance.PayloadClass: it is written as the payload's
// "@class" member, as Curator's serializer writes and reads it.
//
// To compose with other tasks, use the task face: New returns a Discovery
// whose Register, Query and Names, a Registration's Unregister and a
// Cache's Start, Next and Stop (NewCache) are task.Task values to run on
// an executor yourself; Client runs them and waits. A Provider is
// safe from any goroutine and times its down-instance policy on the clock
// it is given (the executor's, through ServiceCache.Provider).
//
// Start with Instance, Discovery.Register and Query, Cache and Provider,
// then Client. The node layout, the JSON, what Curator does and what we
// do differently, the behaviour under each fault and the tests are in
// PROTOCOL.md beside this file.
package discovery
