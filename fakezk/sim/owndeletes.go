package sim

import (
	"strings"

	"github.com/zkflow/zkflow/fakezk"
)

// ownDeletes judges (Scenario.OwnDeletes), from the server's journal,
// that the ephemeral nodes below a directory are deleted only by their
// own session (its delete, or its end), the server or an operator: never
// by another client's session. It is the promise of a recipe whose members delete only their
// own nodes (group's "nothing else deletes a member's node"), and it
// sees what a judge of the requests sent cannot: which node a delete
// applied to. A delete sent again after a lost reply, at the version a
// read from a lagging member gave, applies to whatever node is at the
// path then; with two sessions making nodes at one path (two members of
// one id), only the journal tells whose node went.
type ownDeletes struct {
	dir string // as the clients name it

	r      *Trial
	srvDir string           // dir/ on the server ("" until start)
	owners map[string]int64 // the owning session of each ephemeral node below dir
	zxid   int64            // the last commit's
}

// start begins the judging on r's world, with the nodes below dir now.
// The dir "/" judges every node of the clients' tree (ServerPath("/")
// is the root, "/" with no root).
func (o *ownDeletes) start(r *Trial) {
	o.r, o.srvDir = r, strings.TrimSuffix(r.World.ServerPath(o.dir), "/")+"/"
	o.owners = map[string]int64{}
	prefix := strings.TrimSuffix(o.dir, "/") + "/"
	for _, name := range r.World.Children(o.dir) {
		if st, ok := r.NodeStat(prefix + name); ok && st.EphemeralOwner != 0 {
			o.owners[o.srvDir+name] = st.EphemeralOwner
		}
	}
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
		if !strings.HasPrefix(n.Path, o.srvDir) {
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
		if owner, ok := o.owners[p]; ok {
			delete(o.owners, p)
			o.deleted(c, p, owner)
		}
	}
}

// deleted judges the delete of p, an ephemeral node of owner, by c.
func (o *ownDeletes) deleted(c fakezk.Commit, p string, owner int64) {
	if c.Session != 0 && c.Session != owner && !o.r.World.OperatorSession(owner) {
		cp, _ := o.r.World.ClientPath(p)
		o.r.Errorf("session %#x deleted %s, an ephemeral node of session %#x (zxid %#x): only a node's own session deletes it", c.Session, cp, owner, c.Zxid)
	}
}
