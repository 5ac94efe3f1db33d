package engine

import (
	"database/sql"
	"net/url"
	"sort"
	"time"
)

// Connector is an Engine that queuegen's commands (migrate, the operations
// commands, the dashboard) connect to at run time. Package dburl reads
// addresses and opens handles through it; nothing outside the engine's
// package needs to know its URL schemes, its connection-string form or
// its driver.
type Connector interface {
	Engine
	// Title is the engine's name as people write it, for messages.
	Title() string
	// Schemes are the URL schemes that name the engine.
	Schemes() []string
	// Example is an example URL of the engine and what it names, for the
	// error on an unknown scheme ("mysql://… for MySQL and MariaDB").
	Example() string
	// DSN says whether s, an address without a URL scheme, is in the
	// engine's connection-string form: Sure when it can be no other
	// engine's, Fallback when it is taken for the engine's if no other
	// is sure, or Not.
	DSN(s string) Claim
	// Parse reads an address of the engine: a URL of one of its Schemes
	// (u is it parsed), or a connection string it claimed (u is nil).
	Parse(s string, u *url.URL) (Address, error)
	// Open opens a handle on a with its connections set up as s says.
	Open(a Address, s Session) (*sql.DB, error)
	// LockTimeouts reports whether Open honours Session.LockTimeout.
	LockTimeouts() bool
}

// Claim is how sure a Connector is that a connection string is its.
type Claim int

const (
	// Not is another engine's.
	Not Claim = iota
	// Fallback is the engine's unless another is Sure.
	Fallback
	// Sure is the engine's.
	Sure
)

// Address is a parsed database address.
type Address struct {
	// Engine is the engine's name.
	Engine string
	// URL is the address as given.
	URL string
	// Config is the driver's configuration, for engines whose driver
	// takes one rather than the URL (MySQL's *mysql.Config), or nil.
	Config any
}

// Session is what a handle's connections are set up with, beyond the
// address: bounds on connecting and on lock waits, and a name the
// server's session list shows.
type Session struct {
	// ConnectTimeout bounds connecting, where the address sets no bound of
	// its own (PostgreSQL's connect_timeout, MySQL's timeout); 0 leaves
	// the driver's (none). Callers bound the first round trip with a
	// context too: MySQL's timeout covers the dial only.
	ConnectTimeout time.Duration
	// LockTimeout bounds each wait of a statement for a lock: PostgreSQL's
	// lock_timeout, MySQL's lock_wait_timeout (metadata locks, which DDL
	// takes) and innodb_lock_wait_timeout (row locks), in whole seconds
	// there. Not on SQL Server yet: its driver sets a session up only when
	// it reuses a connection (LockTimeouts is false). 0 leaves the
	// server's.
	LockTimeout time.Duration
	// Name is PostgreSQL's application_name for the connections.
	Name string
}

// Connectors are the registered engines that are Connectors, the default
// engine (first, name first) then the others by name.
func Connectors(first string) []Connector {
	var out []Connector
	for _, n := range Names() {
		e, _ := Lookup(n)
		if c, ok := e.(Connector); ok {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name() == first && out[j].Name() != first })
	return out
}

// Title is the engine called name as people write it, or name itself for
// an engine that is no Connector or not registered.
func Title(name string) string {
	e, err := Lookup(name)
	if err != nil {
		return name
	}
	if c, ok := e.(Connector); ok {
		return c.Title()
	}
	return name
}
