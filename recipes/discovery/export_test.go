package discovery

import "github.com/zkflow/zkflow/task"

// RegistrationSession is the session of a dynamic registration's latest
// registration (its group member's), for the simulation's judge of
// Registered; false for a persistent one.
func RegistrationSession(r *Registration) (task.Session, bool) {
	if r.m == nil {
		return task.Session{}, false
	}
	return r.m.Session(), true
}

// RegistrationCzxid is a persistent registration's incarnation (the
// node Register made or kept), for the simulation's judge of
// Unregister; 0 for a dynamic one.
func RegistrationCzxid(r *Registration) int64 { return r.czxid }
