package sim

import (
	"slices"
	"strings"

	"github.com/zkflow/zkflow/fakezk"
)

// ownDeletes judges (Scenario.OwnDeletes), from the server's journal,
// that the ephemeral nodes at or below a path are deleted only by their
// own session (its delete, or its end), the server or an operator: never
// by another client's session. It is the promise of a recipe whose members delete only their
// own nodes (group's "nothing else deletes a member's node"), and it
// sees what a judge of the requests sent cannot: which node a delete
// applied to. A delete sent again after a lost reply, at the version a
// read from a lagging member gave, applies to whatever node is at the
// path then; with two sessions making nodes at one path (two members of
// one id), only the journal tells whose node went.
//
// A scenario's own operator that runs on a client's executor
// (Scenario.OperatorClients) counts as an operator. A session is
// matched to its process by the executor's Connected event, which may
// come after the session's first requests are applied: with operator
// clients, the deletes by another session are judged at the end of the
// seed (check), when every session a process used is known.
type ownDeletes struct {
	dir       string // as the clients name it
	operators []int  // Scenario.OperatorClients

	r      *Trial
	srvDir string           // dir on the server ("" until start)
	owners map[string]int64 // the owning session of each ephemeral node at or below dir
	// others are the deletes by another session than the node's, judged
	// at the end (with operators only).
	others []otherDelete
	zxid   int64 // the last commit's
}

// otherDelete is the delete of an ephemeral node (path, the server's) by
// session, at zxid, another session than its owner.
type otherDelete struct {
	path           string
	session, owner int64
	zxid           int64
}

// start begins the judging on r's world, with the nodes at and below dir
// now. The dir "/" judges every node of the clients' tree (ServerPath("/")
// is the root, "/" with no root).
func (o *ownDeletes) start(r *Trial) {
	o.r, o.srvDir = r, r.World.ServerPath(o.dir)
	o.owners, o.others, o.zxid = map[string]int64{}, nil, 0
	if st, ok := r.NodeStat(o.dir); ok && st.EphemeralOwner != 0 {
		o.owners[o.srvDir] = st.EphemeralOwner
	}
	prefix, srvPrefix := strings.TrimSuffix(o.dir, "/")+"/", strings.TrimSuffix(o.srvDir, "/")+"/"
	for _, name := range r.World.Children(o.dir) {
		if st, ok := r.NodeStat(prefix + name); ok && st.EphemeralOwner != 0 {
			o.owners[srvPrefix+name] = st.EphemeralOwner
		}
	}
}

// under reports whether p (the server's) is dir or below it.
func (o *ownDeletes) under(p string) bool {
	if o.srvDir == "/" {
		return true
	}
	return strings.HasPrefix(p, o.srvDir) && (len(p) == len(o.srvDir) || p[len(o.srvDir)] == '/')
}

// journal hears each commit (fakezk.Config.Journal). Before start it
// does nothing.
func (o *ownDeletes) journal(c fakezk.Commit) {
	if o.srvDir == "" {
		return
	}
	if c.Zxid <= o.zxid {
		clear(o.owners) // a wipe (Server.Wipe) lost the tree, unjournaled
	}
	o.zxid = c.Zxid
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if !o.under(n.Path) {
			continue
		}
		if owner, ok := o.owners[n.Path]; ok && n.Stat.Czxid == c.Zxid {
			// A node made by this commit where an ephemeral was: a
			// multi deleted that one and made this one (the journal
			// lists the path once, as it is after).
			o.deleted(c, n.Path, owner)
		}
		if n.Stat.EphemeralOwner > 0 { // (containers and TTL nodes store negative marks)
			o.owners[n.Path] = n.Stat.EphemeralOwner
		} else {
			delete(o.owners, n.Path)
		}
	}
	for _, p := range c.Deleted {
		owner, ok := o.owners[p]
		if !ok {
			continue
		}
		delete(o.owners, p)
		o.deleted(c, p, owner)
	}
}

// deleted judges the delete of p, an ephemeral node of owner, by c: at
// once, or at the end of the seed with operator clients.
func (o *ownDeletes) deleted(c fakezk.Commit, p string, owner int64) {
	if c.Session == 0 || c.Session == owner || o.r.World.OperatorSession(owner) {
		return
	}
	d := otherDelete{path: p, session: c.Session, owner: owner, zxid: c.Zxid}
	if len(o.operators) > 0 {
		o.others = append(o.others, d)
		return
	}
	o.report(d)
}

// check judges the deletes kept by journal, now that every session's
// process is known: one by a session of an operator client's process is
// an operator's.
func (o *ownDeletes) check() {
	for _, d := range o.others {
		if p, ok := o.r.World.sessionProc[d.session]; ok && slices.Contains(o.operators, p.client) {
			continue
		}
		o.report(d)
	}
	o.others = nil
}

func (o *ownDeletes) report(d otherDelete) {
	cp, _ := o.r.World.ClientPath(d.path)
	o.r.Errorf("session %#x deleted %s, an ephemeral node of session %#x (zxid %#x): only a node's own session deletes it", d.session, cp, d.owner, d.zxid)
}
