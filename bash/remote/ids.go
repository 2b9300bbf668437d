package remote

import (
	"fmt"
	"sync"

	"github.com/dshgo/dsh/bash"
)

// ref is a task as the far side names it: the link generation it was made
// on, and its id there.
type ref struct {
	gen int
	id  bash.TaskID
}

// idMap gives the far side's tasks ids of the executor's own, bash-1,
// bash-2, …, unique across reconnections (each new far side counts from
// bash-1 again).
type idMap struct {
	mu       sync.Mutex
	next     int
	byLocal  map[bash.TaskID]ref
	byRemote map[ref]bash.TaskID
}

func newIDMap() *idMap {
	return &idMap{byLocal: map[bash.TaskID]ref{}, byRemote: map[ref]bash.TaskID{}}
}

// local returns the id of the far side's task r, giving it one on first
// sight.
func (m *idMap) local(r ref) bash.TaskID {
	if r.id == "" {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if id, ok := m.byRemote[r]; ok {
		return id
	}
	m.next++
	id := bash.TaskID(fmt.Sprintf("bash-%d", m.next))
	m.byLocal[id] = r
	m.byRemote[r] = id
	return id
}

// remote returns where the task id lives.
func (m *idMap) remote(id bash.TaskID) (ref, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.byLocal[id]
	return r, ok
}

// forget drops a task the far side no longer knows.
func (m *idMap) forget(id bash.TaskID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.byLocal[id]; ok {
		delete(m.byLocal, id)
		delete(m.byRemote, r)
	}
}

// forgetGen drops every task of a link generation: its tasks are gone with
// the link... except that reads of them must still say so, so callers only
// use this when nothing will be asked of them (Close).
func (m *idMap) forgetGen(gen int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for r, id := range m.byRemote {
		if r.gen == gen {
			delete(m.byRemote, r)
			delete(m.byLocal, id)
		}
	}
}
