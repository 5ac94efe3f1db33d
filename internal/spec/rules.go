package spec

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// Rules are an engine's rules for the names a spec gives to things that
// reach SQL. Each engine package registers its own (RegisterRules, from its
// init function); the parser reads the spec's engine: key first and checks
// every name with that engine's rules while it parses, so a bad name is
// reported at its file:line:col in the same list as every other spec
// error. Package spec itself knows no engine's facts.
type Rules struct {
	// Title is the engine's name in messages ("PostgreSQL").
	Title string
	// MaxIdentifier is the longest name, in bytes (spec names are ASCII,
	// so bytes are characters), the engine takes; 0 for no limit.
	MaxIdentifier int
	// Keyword reports whether a name is a keyword the engine would not
	// take as a bare name where queuegen writes one; nil when the
	// engine's Check refuses its keywords instead (beside its other
	// errors).
	Keyword func(name string) bool
	// KeywordIs says what a refused keyword is ("an SQL keyword").
	KeywordIs string
	// Prefixes are name prefixes the engine reserves for its own
	// objects, each with why ("which PostgreSQL reserves for its own
	// objects").
	Prefixes map[string]string
	// SystemColumns are hidden per-row columns a table cannot declare.
	SystemColumns map[string]bool
	// DefaultedColumns are column names the engine's generated SQL uses
	// itself where column defaults are evaluated, each with the message
	// refusing a payload column of that name with a default.
	DefaultedColumns map[string]string
	// Settings is the engine's own section of the spec, or nil.
	Settings *Settings
	// PartitionsInside is true where a table's partitions are named within
	// the table (MySQL's PARTITION p20060102), not as tables of their own
	// (PostgreSQL's <archive>_pYYYYMMDD), so that only the archive's own
	// name must fit MaxIdentifier.
	PartitionsInside bool
}

// Settings is an engine's own section of the spec (e.g. sqlserver:), only
// allowed when the spec's engine is that engine.
type Settings struct {
	// Key is the section's key at the top of the spec.
	Key string
	// Bools are the section's true/false keys.
	Bools map[string]BoolSetting
}

// BoolSetting is a true/false key of an engine's settings section: its
// default, and where in the Spec it is kept.
type BoolSetting struct {
	Default bool
	Field   func(*Spec) *bool
}

var (
	rulesMu sync.RWMutex
	rules   = map[string]Rules{}
)

// RegisterRules makes r the naming rules of the engine called name in
// specs (engine: name). Engine packages call it from their init function.
func RegisterRules(name string, r Rules) {
	rulesMu.Lock()
	defer rulesMu.Unlock()
	if _, dup := rules[name]; dup {
		panic("spec: RegisterRules called twice for engine " + name)
	}
	rules[name] = r
}

// RulesFor is the naming rules of the engine called name; an engine with
// none registered (an unknown engine, which the model refuses) gets the
// default engine's, and with none registered at all the zero Rules (only
// the shape of a name is checked).
func RulesFor(name string) Rules {
	rulesMu.RLock()
	defer rulesMu.RUnlock()
	if r, ok := rules[name]; ok {
		return r
	}
	return rules[DefaultEngine]
}

// settingsSections are the registered engines' settings sections, by key,
// with the engine each belongs to.
func settingsSections() (keys []string, sections map[string]*Settings, owner map[string]string) {
	rulesMu.RLock()
	defer rulesMu.RUnlock()
	sections, owner = map[string]*Settings{}, map[string]string{}
	for name, r := range rules {
		if r.Settings != nil {
			sections[r.Settings.Key] = r.Settings
			owner[r.Settings.Key] = name
			keys = append(keys, r.Settings.Key)
		}
	}
	sort.Strings(keys)
	return keys, sections, owner
}

// CheckName says what is wrong with v as a name that reaches SQL on an
// engine with these rules, or "".
func (r Rules) CheckName(v string) string {
	switch {
	case v == "":
		return "a name cannot be empty"
	case r.MaxIdentifier > 0 && len(v) > r.MaxIdentifier:
		return fmt.Sprintf("%q is %d bytes long; %s names are at most %d", v, len(v), r.Title, r.MaxIdentifier)
	case !plainName(v):
		return fmt.Sprintf("%q is not a plain lower-case identifier: use letters a-z, digits and _, starting with a letter or _ and with at least one letter", v)
	case r.Keyword != nil && r.Keyword(v):
		return fmt.Sprintf("%q is %s; choose another name", v, r.KeywordIs)
	}
	prefixes := make([]string, 0, len(r.Prefixes))
	for p := range r.Prefixes {
		prefixes = append(prefixes, p)
	}
	sort.Strings(prefixes)
	for _, p := range prefixes {
		if strings.HasPrefix(v, p) {
			return fmt.Sprintf("%q starts with %s, %s", v, p, r.Prefixes[p])
		}
	}
	return ""
}

// plainName reports whether v is a plain lower-case identifier with at
// least one letter, the shape every engine takes unquoted.
func plainName(v string) bool {
	return identRE.MatchString(v) && strings.Trim(v, "_0123456789") != ""
}

// engineOf is the value of the top-level engine: key of the spec mapping
// n as written, or DefaultEngine: the parser needs the engine's rules
// before it reads the names, and engine: may come after them.
func engineOf(n *yaml.Node) string {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k, v := n.Content[i], n.Content[i+1]; k.Value == "engine" && v.Kind == yaml.ScalarNode {
				return v.Value
			}
		}
	}
	return DefaultEngine
}
