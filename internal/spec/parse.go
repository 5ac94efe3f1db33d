package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/queuegen/queuegen/queue"
)

// Defaults applied to keys a spec leaves out. They are documented in the
// README's spec reference.
const (
	DefaultEngine      = "postgresql"
	DefaultSchema      = "public"
	DefaultMigrations  = "queuegen_db_version"
	DefaultBaseTable   = "base_queue"
	DefaultLease       = 5 * time.Minute
	DefaultMaxAttempts = 25
	DefaultBackoffMin  = time.Second
	DefaultBackoffMax  = time.Hour
	DefaultFactor      = 2.0
	DefaultJitter      = 0.1
	DefaultJSONColumn  = "payload"
	// MaxDefaultLength bounds a column default: it is written into
	// migrations and the schema sqlc reads.
	MaxDefaultLength = 4096
)

// Load reads and parses the spec file at path.
func Load(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse parses and validates a spec. file names the spec in error messages.
// On failure the error is an Errors value listing every problem found.
func Parse(file string, data []byte) (*Spec, error) {
	p := &parser{file: file, keys: map[string]Pos{}}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, Errors{p.yamlError(err)}
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		line := 1
		for i, l := range strings.Split(string(data), "\n") {
			if i > 0 && strings.HasPrefix(l, "---") {
				line = i + 1
				break
			}
		}
		return nil, Errors{{File: file, Line: line, Column: 1, Msg: "a second YAML document (after ---): a spec is one document; remove the ---"}}
	}
	s := &Spec{File: file, Engine: DefaultEngine, keys: p.keys}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, Errors{{File: file, Line: 1, Column: 1, Msg: "the spec is empty: write a starter spec with queuegen init"}}
	}
	p.rules = RulesFor(engineOf(doc.Content[0]))
	p.spec(doc.Content[0], s)
	if len(p.errs) > 0 {
		return nil, p.errs.sorted()
	}
	return s, nil
}

type parser struct {
	file string
	errs Errors
	keys map[string]Pos // every key read, by dotted path
	// rules are the naming rules of the spec's engine (read before the
	// rest of the spec: see engineOf).
	rules Rules
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// yamlError turns a YAML syntax error into an Error with its line.
func (p *parser) yamlError(err error) *Error {
	e := &Error{File: p.file, Line: 1, Column: 1, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	var te *yaml.TypeError
	msg := err.Error()
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
	}
	return e
}

func (p *parser) errorf(n *yaml.Node, key, format string, args ...any) {
	p.errs = append(p.errs, &Error{File: p.file, Line: n.Line, Column: n.Column, Key: key, Msg: fmt.Sprintf(format, args...)})
}

// fields walks a mapping node, calling the handler registered for each key.
// Unknown and repeated keys are errors that list what is allowed.
func (p *parser) fields(n *yaml.Node, key string, handlers map[string]func(key string, v *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, key, "want a mapping with keys %s, got %s", known(handlers), describe(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		sub := join(key, k.Value)
		h, ok := handlers[k.Value]
		switch {
		case !ok:
			p.errorf(k, sub, "unknown key (allowed here: %s)", known(handlers))
		case seen[k.Value]:
			p.errorf(k, sub, "key given twice")
		default:
			seen[k.Value] = true
			p.keys[sub] = Pos{k.Line, k.Column}
			h(sub, v)
		}
	}
}

// pairs walks a mapping whose keys are names chosen by the user.
func (p *parser) pairs(n *yaml.Node, key string, each func(k, v *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, key, "want a mapping of name: value, got %s", describe(n))
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		each(n.Content[i], n.Content[i+1])
	}
}

func known(handlers map[string]func(string, *yaml.Node)) string {
	keys := make([]string, 0, len(handlers))
	for k := range handlers {
		keys = append(keys, k)
	}
	sortStrings(keys)
	return strings.Join(keys, ", ")
}

func join(key, sub string) string {
	if key == "" {
		return sub
	}
	return key + "." + sub
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Tag == "!!null" {
		return "nothing"
	}
	return fmt.Sprintf("%q", n.Value)
}

func (p *parser) scalar(n *yaml.Node, key string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errorf(n, key, "want a value, got %s", describe(n))
		return "", false
	}
	return n.Value, true
}

var identRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// engine reads the engine's name: a plain name (which engines there are
// is the model's to say; the engine's naming rules do not apply to it).
func (p *parser) engine(n *yaml.Node, key string) string {
	v, ok := p.scalar(n, key)
	if !ok {
		return ""
	}
	if v == "" || !plainName(v) {
		p.errorf(n, key, "%q is not a plain lower-case identifier: use letters a-z, digits and _, starting with a letter or _ and with at least one letter", v)
		return ""
	}
	return v
}

// settings reads an engine's own settings section.
func (p *parser) settings(n *yaml.Node, key string, s *Spec, sec *Settings) {
	handlers := map[string]func(string, *yaml.Node){}
	for name, b := range sec.Bools {
		handlers[name] = func(k string, v *yaml.Node) { *b.Field(s) = p.boolean(v, k) }
	}
	p.fields(n, key, handlers)
}

// ident reads a name that will reach SQL: a plain lower-case identifier
// that needs no quoting.
func (p *parser) ident(n *yaml.Node, key string) string {
	v, ok := p.scalar(n, key)
	if !ok {
		return ""
	}
	if msg := p.rules.CheckName(v); msg != "" {
		p.errorf(n, key, "%s", msg)
		return ""
	}
	return v
}

func (p *parser) boolean(n *yaml.Node, key string) bool {
	v, ok := p.scalar(n, key)
	if !ok {
		return false
	}
	switch v {
	case "true":
		return true
	case "false":
		return false
	}
	p.errorf(n, key, "want true or false, got %q", v)
	return false
}

func (p *parser) integer(n *yaml.Node, key string, min, max int) int {
	v, ok := p.scalar(n, key)
	if !ok {
		return 0
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < min || i > max {
		p.errorf(n, key, "want a whole number from %d to %d, got %q", min, max, v)
		return 0
	}
	return i
}

func (p *parser) number(n *yaml.Node, key string, min, max float64) float64 {
	v, ok := p.scalar(n, key)
	if !ok {
		return 0
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || f < min || f > max {
		p.errorf(n, key, "want a number from %g to %g, got %q", min, max, v)
		return 0
	}
	return f
}

// duration reads a Go duration ("90s", "1h30m") or a number of days ("7d").
func (p *parser) duration(n *yaml.Node, key string) time.Duration {
	v, ok := p.scalar(n, key)
	if !ok {
		return 0
	}
	d, err := parseDuration(v)
	if err != nil {
		p.errorf(n, key, "bad duration %q: want a Go duration such as 30s, 5m, 1h30m, or days such as 7d", v)
		return 0
	}
	if d < 0 {
		p.errorf(n, key, "duration %q is negative", v)
		return 0
	}
	return d
}

// durationAtLeast is duration for a key whose value must be at least min
// (zero included: it would mean no time at all, not a default); why says
// what a shorter one would do.
func (p *parser) durationAtLeast(n *yaml.Node, key string, min time.Duration, why string) time.Duration {
	before := len(p.errs)
	d := p.duration(n, key)
	if len(p.errs) == before && d < min {
		p.errorf(n, key, "%s", why)
	}
	return d
}

func parseDuration(v string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 36500 {
			return 0, fmt.Errorf("bad days")
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(v)
}

// dir reads a directory path relative to the spec file.
func (p *parser) dir(n *yaml.Node, key string) string {
	v, ok := p.scalar(n, key)
	if !ok {
		return ""
	}
	clean := path.Clean(strings.ReplaceAll(v, `\`, "/"))
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		p.errorf(n, key, "%q must be a path relative to the spec file's directory and inside it", v)
		return ""
	}
	return clean
}

func (p *parser) spec(n *yaml.Node, s *Spec) {
	var haveVersion, havePackage, haveQueues bool
	var queuesNode *yaml.Node
	dirNodes := map[string]*yaml.Node{} // migrations, queries, package.dir (package's node)
	s.Schema = DefaultSchema
	s.MigrationsTable = DefaultMigrations
	s.Base.Table = DefaultBaseTable
	sectionKeys, sections, sectionEngine := settingsSections()
	for _, key := range sectionKeys {
		for _, b := range sections[key].Bools {
			*b.Field(s) = b.Default
		}
	}
	handlers := map[string]func(string, *yaml.Node){
		"version": func(k string, v *yaml.Node) {
			haveVersion = true
			if val, ok := p.scalar(v, k); ok && val != "1" {
				p.errorf(v, k, "unsupported version %q: this queuegen reads version 1", val)
			}
			s.Version = 1
		},
		"package": func(k string, v *yaml.Node) {
			havePackage, dirNodes["package.dir"] = true, v
			p.pkg(v, k, &s.Package)
		},
		"engine":     func(k string, v *yaml.Node) { s.Engine = p.engine(v, k) },
		"migrations": func(k string, v *yaml.Node) { s.Migrations, dirNodes[k] = p.dir(v, k), v },
		"queries":    func(k string, v *yaml.Node) { s.Queries, dirNodes[k] = p.dir(v, k), v },
		"schema":     func(k string, v *yaml.Node) { s.Schema = p.ident(v, k) },
		"migrations_table": func(k string, v *yaml.Node) {
			s.MigrationsTable = p.ident(v, k)
		},
		"base": func(k string, v *yaml.Node) { p.base(v, k, &s.Base) },
		"queues": func(k string, v *yaml.Node) {
			haveQueues = true
			queuesNode = v
			p.queues(v, k, s)
		},
	}
	for _, key := range sectionKeys {
		handlers[key] = func(k string, v *yaml.Node) { p.settings(v, k, s, sections[key]) }
	}
	p.fields(n, "", handlers)
	if n.Kind != yaml.MappingNode {
		return
	}
	missing := func(key, what string) {
		p.errs = append(p.errs, &Error{File: p.file, Line: n.Line, Column: n.Column, Key: key, Msg: "missing: " + what})
	}
	if !haveVersion {
		missing("version", "set version: 1")
	}
	for _, key := range sectionKeys {
		if pos, ok := p.keys[key]; ok && s.Engine != sectionEngine[key] {
			p.errs = append(p.errs, &Error{File: p.file, Line: pos.Line, Column: pos.Column, Key: key,
				Msg: fmt.Sprintf("settings for engine %s, but the spec's engine is %s; remove them", sectionEngine[key], s.Engine)})
		}
	}
	if !havePackage {
		missing("package", "say where the Go code goes, e.g. package: {name: jobs, dir: internal/jobs}")
	}
	if s.Migrations == "" && !p.hasKey(n, "migrations") {
		missing("migrations", "the directory for goose migrations, e.g. migrations: db/migrations")
	}
	if s.Queries == "" && !p.hasKey(n, "queries") {
		missing("queries", "the directory for sqlc query files, e.g. queries: db/queries")
	}
	dirs := []struct{ key, dir string }{{"migrations", s.Migrations}, {"queries", s.Queries}, {"package.dir", s.Package.Dir}}
	for i, a := range dirs {
		for _, b := range dirs[i+1:] {
			if a.dir == "" || a.dir != b.dir {
				continue
			}
			p.errorf(dirNodes[b.key], b.key, "%s and %s are both %s: generate owns the files of each, and would take the other's for stale ones; give each a directory of its own", a.key, b.key, a.dir)
		}
	}
	if !haveQueues {
		missing("queues", "declare at least one queue")
	} else if queuesNode.Kind == yaml.SequenceNode && len(queuesNode.Content) == 0 {
		p.errorf(queuesNode, "queues", "declare at least one queue")
	}
	p.crossChecks(n, s)
}

func (p *parser) hasKey(n *yaml.Node, key string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}

var goIdentRE = regexp.MustCompile(`^[a-z][a-z0-9]*$`)

// importPathRE is what a Go import path of a module's package looks like:
// elements of letters, digits and ._~- (not starting with a dot or a
// hyphen), separated by single slashes.
var importPathRE = regexp.MustCompile(`^[A-Za-z0-9_~][A-Za-z0-9._~-]*(/[A-Za-z0-9_~][A-Za-z0-9._~-]*)*$`)

func (p *parser) pkg(n *yaml.Node, key string, pkg *Package) {
	p.fields(n, key, map[string]func(string, *yaml.Node){
		"name": func(k string, v *yaml.Node) {
			name, ok := p.scalar(v, k)
			if ok && goKeywords[name] {
				p.errorf(v, k, "%q is a Go keyword, which cannot name a package; choose another name", name)
				return
			}
			if ok && !goIdentRE.MatchString(name) {
				p.errorf(v, k, "%q is not a good Go package name: use lower-case letters and digits, starting with a letter", name)
				return
			}
			pkg.Name = name
		},
		"dir": func(k string, v *yaml.Node) { pkg.Dir = p.dir(v, k) },
		"import_path": func(k string, v *yaml.Node) {
			ip, ok := p.scalar(v, k)
			if ok && !importPathRE.MatchString(ip) {
				p.errorf(v, k, "%q is not a Go import path: want slash-separated elements of letters, digits and ._~-, such as example.com/app/internal/jobs", ip)
				return
			}
			pkg.ImportPath = ip
		},
	})
	if n.Kind == yaml.MappingNode && (!p.hasKey(n, "name") || !p.hasKey(n, "dir")) {
		p.errorf(n, key, "needs both name and dir")
	}
}

func (p *parser) base(n *yaml.Node, key string, b *Base) {
	p.fields(n, key, map[string]func(string, *yaml.Node){
		"table":   func(k string, v *yaml.Node) { b.Table = p.ident(v, k) },
		"columns": func(k string, v *yaml.Node) { b.Columns = p.columns(v, k) },
	})
}

func (p *parser) queues(n *yaml.Node, key string, s *Spec) {
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, key, "want a list of queues (- name: …), got %s", describe(n))
		return
	}
	for i, qn := range n.Content {
		q := p.queue(qn, fmt.Sprintf("%s[%d]", key, i))
		if q != nil {
			s.Queues = append(s.Queues, q)
		}
	}
}

func (p *parser) queue(n *yaml.Node, key string) *Queue {
	q := &Queue{
		Pos:         Pos{n.Line, n.Column},
		Inherits:    true,
		Mode:        ModeLease,
		Lock:        LockSkipLocked,
		Lease:       DefaultLease,
		MaxAttempts: DefaultMaxAttempts,
		Backoff:     Backoff{Min: DefaultBackoffMin, Max: DefaultBackoffMax, Factor: DefaultFactor, Jitter: DefaultJitter},
		OnSuccess:   OnSuccessDelete,
	}
	// Name the queue in keys as soon as it is known: "queues[email]" reads
	// better than "queues[3]".
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "name" && n.Content[i+1].Kind == yaml.ScalarNode && n.Content[i+1].Value != "" {
				key = fmt.Sprintf("queues[%s]", n.Content[i+1].Value)
			}
		}
	}
	p.keys[key] = Pos{n.Line, n.Column}
	var havePayload, haveLease bool
	var leaseNode, onSuccessNode, retentionNode, fairNode *yaml.Node
	var limitsNode, perKeyNode, globalNode, rateNode, rateByNode, backlogNode, distributeNode *yaml.Node
	p.fields(n, key, map[string]func(string, *yaml.Node){
		"name":         func(k string, v *yaml.Node) { q.Name = p.ident(v, k) },
		"renamed_from": func(k string, v *yaml.Node) { q.RenamedFrom = p.ident(v, k) },
		"table":        func(k string, v *yaml.Node) { q.Table = p.ident(v, k) },
		"inherits":     func(k string, v *yaml.Node) { q.Inherits = p.boolean(v, k) },
		"mode": func(k string, v *yaml.Node) {
			q.Mode = Mode(p.oneOf(v, k, string(ModeLease), string(ModeTransaction)))
		},
		"lock": func(k string, v *yaml.Node) {
			q.Lock = Lock(p.oneOf(v, k, string(LockSkipLocked), string(LockNowait)))
		},
		"lease": func(k string, v *yaml.Node) {
			haveLease, leaseNode = true, v
			q.Lease = p.durationAtLeast(v, k, time.Second, "a lease under 1s expires before a job can be worked; use at least 1s")
		},
		"max_attempts": func(k string, v *yaml.Node) { q.MaxAttempts = p.integer(v, k, 1, 10000) },
		"backoff":      func(k string, v *yaml.Node) { p.backoff(v, k, &q.Backoff) },
		"priority":     func(k string, v *yaml.Node) { q.Priority = p.boolean(v, k) },
		"fair_by": func(k string, v *yaml.Node) {
			fairNode = v
			q.FairBy = p.ident(v, k)
		},
		"limits": func(k string, v *yaml.Node) {
			limitsNode = v
			p.fields(v, k, map[string]func(string, *yaml.Node){
				"per_key": func(k string, v *yaml.Node) { perKeyNode, q.Limits.PerKey = v, p.integer(v, k, 1, 1000000) },
				"global":  func(k string, v *yaml.Node) { globalNode, q.Limits.Global = v, p.integer(v, k, 1, 1000000) },
			})
		},
		"rate": func(k string, v *yaml.Node) {
			rateNode = v
			q.Rate = Rate{Per: time.Second}
			p.fields(v, k, map[string]func(string, *yaml.Node){
				"limit": func(k string, v *yaml.Node) { q.Rate.Limit = p.integer(v, k, 1, 1000000) },
				"per": func(k string, v *yaml.Node) {
					if q.Rate.Per = p.duration(v, k); q.Rate.Per < 10*time.Millisecond || q.Rate.Per > 24*time.Hour {
						p.errorf(v, k, "want a window from 10ms to 1d, got %s", q.Rate.Per)
					}
				},
				"by": func(k string, v *yaml.Node) { rateByNode, q.Rate.By = v, p.ident(v, k) },
			})
		},
		"backlog": func(k string, v *yaml.Node) {
			backlogNode = v
			q.Backlog = Backlog{Batch: DefaultBacklogBatch}
			p.fields(v, k, map[string]func(string, *yaml.Node){
				"batch": func(k string, v *yaml.Node) { q.Backlog.Batch = p.integer(v, k, 10, 100000) },
			})
		},
		"unique": func(k string, v *yaml.Node) { q.Unique = p.boolean(v, k) },
		"notify": func(k string, v *yaml.Node) { q.Notify = p.boolean(v, k) },
		"on_success": func(k string, v *yaml.Node) {
			onSuccessNode = v
			q.OnSuccess = OnSuccess(p.oneOf(v, k, string(OnSuccessDelete), string(OnSuccessKeep), string(OnSuccessArchive)))
		},
		"retention": func(k string, v *yaml.Node) {
			retentionNode = v
			p.fields(v, k, map[string]func(string, *yaml.Node){
				"succeeded": func(k string, v *yaml.Node) { q.Retention.Succeeded = p.duration(v, k) },
				"dead":      func(k string, v *yaml.Node) { q.Retention.Dead = p.duration(v, k) },
			})
		},
		"payload": func(k string, v *yaml.Node) {
			havePayload = true
			p.payload(v, k, &q.Payload)
		},
		"periodic": func(k string, v *yaml.Node) { q.Periodic = p.periodic(v, k) },
		"distribute": func(k string, v *yaml.Node) {
			distributeNode = v
			p.fields(v, k, map[string]func(string, *yaml.Node){
				"buckets": func(k string, v *yaml.Node) { q.Distribute.Buckets = p.integer(v, k, 1, MaxBuckets) },
			})
		},
	})
	if n.Kind != yaml.MappingNode {
		return nil
	}
	if q.Name == "" {
		if !p.hasKey(n, "name") {
			p.errorf(n, key, "missing: name")
		}
		return nil
	}
	if q.Table == "" && !p.hasKey(n, "table") {
		q.Table = q.Name + "_queue"
		if max := p.rules.MaxIdentifier; max > 0 && len(q.Table) > max {
			p.errorf(n, key+".name", "the default table name %q is too long; set table", q.Table)
		}
	}
	if !havePayload {
		p.errorf(n, key, "missing: payload (columns: or json:)")
	}
	if haveLease && q.Mode == ModeTransaction {
		p.errorf(leaseNode, key+".lease", "a transaction-mode queue holds jobs by row lock, not by lease; remove lease or use mode: lease")
	}
	if q.Retention.Succeeded > 0 && q.OnSuccess == OnSuccessDelete {
		p.errorf(n, key+".retention.succeeded", "completed jobs are deleted (on_success: delete), so there is nothing to retain; set on_success: keep")
	}
	if q.OnSuccess == OnSuccessArchive {
		if q.Retention.Succeeded <= 0 {
			p.errorf(onSuccessNode, key+".on_success", "an archive drops its daily partitions once they pass retention.succeeded, which is missing; set retention: {succeeded: …} (or use on_success: keep to keep jobs forever)")
		} else if q.Retention.Succeeded < 24*time.Hour {
			p.errorf(retentionNode, key+".retention.succeeded", "an archive drops whole days: retention.succeeded must be at least 1d (it is %s)", q.Retention.Succeeded)
		}
		if max := p.rules.MaxIdentifier; max > 0 && p.rules.PartitionsInside && len(q.Table)+len(ArchiveSuffix) > max {
			p.errorf(onSuccessNode, key+".on_success", "the archive's name %s%s is longer than %d bytes; use a table name of at most %d bytes",
				q.Table, ArchiveSuffix, max, max-len(ArchiveSuffix))
		} else if max > 0 && !p.rules.PartitionsInside && len(q.Table)+len(ArchiveSuffix)+ArchivePartitionSuffixLen > max {
			p.errorf(onSuccessNode, key+".on_success", "the archive's daily partitions are named %s%s_pYYYYMMDD, longer than %d bytes; use a table name of at most %d bytes",
				q.Table, ArchiveSuffix, max, max-len(ArchiveSuffix)-ArchivePartitionSuffixLen)
		}
	}
	if q.FairBy != "" {
		p.checkFairBy(fairNode, key+".fair_by", q)
	}
	if limitsNode != nil {
		p.checkLimits(key+".limits", q, limitsNode, perKeyNode, globalNode)
	}
	if rateNode != nil {
		p.checkRate(key+".rate", q, rateNode, rateByNode)
	}
	if backlogNode != nil {
		p.checkBacklog(key+".backlog", q, backlogNode)
	}
	if distributeNode != nil {
		p.checkDistribute(key+".distribute", q, distributeNode)
	}
	if max := p.rules.MaxIdentifier; max > 0 && q.Notify && len(q.Table) > max-len("queuegen_") {
		p.errorf(n, key+".notify", "the notification channel queuegen_%s would be longer than %d bytes; use a shorter table name", q.Table, max)
	}
	if q.Backoff.Max < q.Backoff.Min {
		p.errorf(n, key+".backoff", "max (%s) is less than min (%s)", q.Backoff.Max, q.Backoff.Min)
	}
	return q
}

// checkFairBy checks that fair_by names a payload column that can key the
// fair claim: one of the queue's own columns, never NULL.
func (p *parser) checkFairBy(n *yaml.Node, key string, q *Queue) {
	if q.Payload.JSON != nil {
		p.errorf(n, key, "fair_by names a payload column, and a JSON payload has none to index; use payload.columns")
		return
	}
	var names []string
	for _, c := range q.Payload.Columns {
		if c.Name != q.FairBy {
			names = append(names, c.Name)
			continue
		}
		if c.Nullable {
			p.errorf(n, key, "column %s is nullable; a fair claim needs a key on every job: make it NOT NULL", c.Name)
		}
		return
	}
	p.errorf(n, key, "the queue has no payload column %q (its columns: %s)", q.FairBy, strings.Join(names, ", "))
}

// checkLimits checks that a queue's limits can be counted: the claim
// counts leased jobs, so the queue is in lease mode, and a per-key limit
// counts them by the fair_by column.
func (p *parser) checkLimits(key string, q *Queue, n, perKey, global *yaml.Node) {
	if n.Kind == yaml.MappingNode && len(n.Content) == 0 {
		p.errorf(n, key, "set per_key, global or both")
	}
	if q.Mode == ModeTransaction {
		p.errorf(n, key, "limits count the jobs that hold a lease, and a transaction-mode queue's running jobs are row locks no other session can count; use mode: lease")
	}
	if q.Limits.PerKey > 0 && q.FairBy == "" {
		p.errorf(perKey, key+".per_key", "a per-key limit counts running jobs by the fair_by column, which is not set; add fair_by: <column>")
	}
	if q.Limits.PerKey > 0 && q.Limits.Global > 0 && q.Limits.Global < q.Limits.PerKey {
		p.errorf(global, key+".global", "global (%d) is less than per_key (%d), so per_key never reaches its limit", q.Limits.Global, q.Limits.PerKey)
	}
}

// checkRate checks that a queue's rate limit can be held: a limit is
// given, the queue is in lease mode (its claims commit, and so does the
// rate log), and a per-key rate counts by the fair_by column.
func (p *parser) checkRate(key string, q *Queue, n, by *yaml.Node) {
	if n.Kind == yaml.MappingNode && !p.hasKey(n, "limit") {
		p.errorf(n, key, "missing: limit (the most claims per window)")
	}
	if q.Mode == ModeTransaction {
		p.errorf(n, key, "a rate limit is kept in a log that each claim writes and commits; a transaction-mode claim commits with its job, so use mode: lease")
	}
	if q.Rate.By != "" && (q.Rate.By == "claimed_at" || q.Rate.By == "jobs") {
		p.errorf(by, key+".by", "the rate log keeps claimed_at and jobs beside the %s of each claim, so a per-key rate cannot count by a column of that name; rename the column", q.Rate.By)
	}
	if q.Rate.By != "" && q.Rate.By != q.FairBy {
		why := "fair_by is not set"
		if q.FairBy != "" {
			why = "fair_by is " + q.FairBy
		}
		p.errorf(by, key+".by", "a per-key rate counts claims by the fair_by column, and %s; set fair_by: %s or remove by", why, q.Rate.By)
	}
}

// checkBacklog checks that a queue's backlog can be scheduled: the
// scheduler step moves jobs by fair_by, into a lease-mode queue table, and
// neither a unique key nor the limits (held by claims of the queue table
// alone) would hold across the two tables.
func (p *parser) checkBacklog(key string, q *Queue, n *yaml.Node) {
	if q.FairBy == "" {
		p.errorf(n, key, "a backlog is moved to the queue table by taking each fair_by value's share in turn, and fair_by is not set (without it, a claim in order is already an index lookup); add fair_by: <column> or remove backlog")
	}
	if q.Mode == ModeTransaction {
		p.errorf(n, key, "a backlog is built for lease mode, whose claims commit; use mode: lease or remove backlog")
	}
	if q.Unique {
		p.errorf(n, key, "a unique key is held by an index of one table, and a backlog keeps a queue's jobs in two; remove unique or backlog")
	}
	if q.Limits.Set() || q.Rate.Set() {
		p.errorf(n, key, "limits and rate are held by the fair claim, which a backlog moves to its scheduler step; remove them or backlog (both together are not built yet)")
	}
	if max := p.rules.MaxIdentifier; max > 0 && q.Notify && len(q.Table)+len(BacklogSuffix) > max-len("queuegen_") {
		p.errorf(n, key, "pushes notify channel queuegen_%s%s, longer than %d bytes; use a shorter table name", q.Table, BacklogSuffix, max)
	}
}

// checkDistribute checks that a distributed queue is one this queuegen
// can spread over a Citus cluster: buckets given, a standalone table, and
// none of the features whose statements need more than one bucket's
// shard at a time (not built yet). Whether the engine can distribute at
// all is the engine's to say (the model asks it).
func (p *parser) checkDistribute(key string, q *Queue, n *yaml.Node) {
	if n.Kind == yaml.MappingNode && !p.hasKey(n, "buckets") {
		p.errorf(n, key, "missing: buckets (how many buckets the jobs are spread over, e.g. buckets: 64; at least 4 per shard)")
	}
	if q.Inherits {
		p.errorf(n, key, "Citus distributes only standalone tables, not INHERITS children (inherits is true unless set); set inherits: false")
	}
	if q.Mode == ModeTransaction {
		p.errorf(n, key, "a distributed queue's claims walk its buckets, one statement each; in transaction mode those claims would hold row locks on several nodes for a whole handler, each transaction a two-phase commit (not built yet); use mode: lease")
	}
	if q.FairBy != "" {
		p.errorf(n, key, "a fair claim takes each fair_by value in turn across the whole queue, and a distributed claim reads one bucket (fair within a bucket is not built yet); remove fair_by or distribute")
	}
	if q.Limits.Set() || q.Rate.Set() {
		p.errorf(n, key, "limits and rate are counts across the whole queue under one lock, and a distributed queue's jobs are on many nodes; remove them or distribute")
	}
	if q.Backlog.Set() {
		p.errorf(n, key, "a backlog moves jobs between two tables, each distributed by bucket (not built yet); remove backlog or distribute")
	}
	if q.OnSuccess == OnSuccessArchive {
		p.errorf(n, key, "an archive is a partitioned table its completions move jobs to, and a distributed archive is not built yet; use on_success: keep or delete")
	}
	for _, c := range q.Payload.Columns {
		if c.Name == BucketColumn || GoName(c.Name) == GoName(BucketColumn) {
			p.errorf(n, key, "a distributed queue's table has a column %s of its own (its distribution column, Go field %s), and the payload declares %s; rename the payload column", BucketColumn, GoName(BucketColumn), c.Name)
		}
	}
	if j := q.Payload.JSON; j != nil && j.Column == BucketColumn {
		p.errorf(n, key, "a distributed queue's table has a column %s of its own (its distribution column), and the JSON payload's column is named so; set payload.json.column to another name", BucketColumn)
	}
}

func (p *parser) periodic(n *yaml.Node, key string) []*Periodic {
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, key, "want a list of periodic jobs (- name: …), got %s", describe(n))
		return nil
	}
	var out []*Periodic
	seen := map[string]bool{}
	for i, item := range n.Content {
		k := fmt.Sprintf("%s[%d]", key, i)
		pj := &Periodic{Pos: Pos{item.Line, item.Column}}
		p.fields(item, k, map[string]func(string, *yaml.Node){
			"name": func(k string, v *yaml.Node) { pj.Name = p.ident(v, k) },
			"every": func(k string, v *yaml.Node) {
				pj.Every = p.durationAtLeast(v, k, time.Second, "a periodic job runs at most every second; use at least 1s")
			},
			"cron": func(k string, v *yaml.Node) {
				if c, ok := p.scalar(v, k); ok {
					if _, err := queue.ParseCron(c); err != nil {
						p.errorf(v, k, "%v", err)
					}
					pj.Cron = c
				}
			},
			"payload": func(k string, v *yaml.Node) {
				if v.Kind != yaml.MappingNode {
					p.errorf(v, k, "want a mapping of field: value, got %s", describe(v))
					return
				}
				pj.node, pj.key = v, k
				var doc any
				if err := v.Decode(&doc); err == nil {
					if data, err := json.Marshal(doc); err == nil {
						pj.JSON = string(data)
					}
				}
				pj.Payload = map[string]string{}
				p.pairs(v, k, func(fk, fv *yaml.Node) {
					if fv.Kind == yaml.ScalarNode && fv.Tag == "!!null" {
						p.errorf(fv, k+"."+fk.Value, "null is not a fixed value: leave the field out (it then takes its default, or NULL)")
						return
					}
					if fv.Kind != yaml.ScalarNode {
						pj.Payload[fk.Value] = "\x00" // not a scalar: only a go_type payload takes it
						return
					}
					pj.Payload[fk.Value] = fv.Value
				})
			},
		})
		if item.Kind != yaml.MappingNode {
			continue
		}
		if (pj.Every > 0) == (pj.Cron != "") && (p.hasKey(item, "every") == p.hasKey(item, "cron")) {
			p.errorf(item, k, "give exactly one of every: or cron:")
		}
		if pj.Name == "" {
			if !p.hasKey(item, "name") {
				p.errorf(item, k, "missing: name")
			}
			continue
		}
		if seen[pj.Name] {
			p.errorf(item, k+".name", "periodic job %q is declared twice", pj.Name)
		}
		seen[pj.Name] = true
		out = append(out, pj)
	}
	return out
}

// jsonable checks that a YAML value is a JSON document as written: maps
// with string keys, lists, strings, finite numbers, booleans and null, and
// no aliases (anchors and *references), which JSON has no form for.
func (p *parser) jsonable(n *yaml.Node, key string) bool {
	switch n.Kind {
	case yaml.AliasNode:
		p.errorf(n, key, "YAML aliases (*name) are not allowed in a fixed payload; write the value out")
		return false
	case yaml.MappingNode:
		ok := true
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
				p.errorf(k, key, "the key %s is not a string; JSON keys are strings (quote it)", describe(k))
				ok = false
				continue
			}
			ok = p.jsonable(v, join(key, k.Value)) && ok
		}
		return ok
	case yaml.SequenceNode:
		ok := true
		for i, v := range n.Content {
			ok = p.jsonable(v, fmt.Sprintf("%s[%d]", key, i)) && ok
		}
		return ok
	case yaml.ScalarNode:
		var f float64
		if n.Tag == "!!float" && (n.Decode(&f) != nil || math.IsInf(f, 0) || math.IsNaN(f)) {
			p.errorf(n, key, "%q is not a finite number; JSON has no NaN or infinity", n.Value)
			return false
		}
		if n.Tag == "!!binary" || n.Tag == "!!timestamp" {
			p.errorf(n, key, "a %s value has no JSON form; quote it to make it a string", strings.TrimPrefix(n.Tag, "!!"))
			return false
		}
	}
	return true
}

func (p *parser) oneOf(n *yaml.Node, key string, allowed ...string) string {
	v, ok := p.scalar(n, key)
	if !ok {
		return allowed[0]
	}
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	p.errorf(n, key, "want one of %s, got %q", strings.Join(allowed, ", "), v)
	return allowed[0]
}

func (p *parser) backoff(n *yaml.Node, key string, b *Backoff) {
	p.fields(n, key, map[string]func(string, *yaml.Node){
		"min":    func(k string, v *yaml.Node) { b.Min = p.duration(v, k) },
		"max":    func(k string, v *yaml.Node) { b.Max = p.duration(v, k) },
		"factor": func(k string, v *yaml.Node) { b.Factor = p.number(v, k, 1, 100) },
		"jitter": func(k string, v *yaml.Node) { b.Jitter = p.number(v, k, 0, 1) },
	})
}

func (p *parser) payload(n *yaml.Node, key string, pl *Payload) {
	p.fields(n, key, map[string]func(string, *yaml.Node){
		"columns": func(k string, v *yaml.Node) {
			pl.Columns = p.columns(v, k)
			if v.Kind == yaml.MappingNode && len(v.Content) == 0 {
				p.errorf(v, k, "declare at least one column")
			}
		},
		"json": func(k string, v *yaml.Node) { pl.JSON = p.jsonPayload(v, k) },
	})
	if n.Kind == yaml.MappingNode && p.hasKey(n, "columns") == p.hasKey(n, "json") {
		p.errorf(n, key, "give exactly one of columns: or json:")
	}
}

func (p *parser) jsonPayload(n *yaml.Node, key string) *JSONPayload {
	j := &JSONPayload{Column: DefaultJSONColumn}
	p.fields(n, key, map[string]func(string, *yaml.Node){
		"column": func(k string, v *yaml.Node) { j.Column = p.ident(v, k) },
		"go_type": func(k string, v *yaml.Node) {
			j.GoType = &GoType{}
			p.fields(v, k, map[string]func(string, *yaml.Node){
				"import": func(k string, v *yaml.Node) {
					if s, ok := p.scalar(v, k); ok {
						if !importRE.MatchString(s) || slices.ContainsFunc(strings.Split(s, "/"), func(e string) bool { return e == "." || e == ".." }) {
							p.errorf(v, k, "%q is not a Go import path", s)
						}
						j.GoType.Import = s
					}
				},
				"type": func(k string, v *yaml.Node) {
					if s, ok := p.scalar(v, k); ok {
						if !exportedRE.MatchString(s) {
							p.errorf(v, k, "%q is not an exported Go type name", s)
						}
						j.GoType.Type = s
					}
				},
			})
			if v.Kind == yaml.MappingNode && (!p.hasKey(v, "import") || !p.hasKey(v, "type")) {
				p.errorf(v, k, "needs both import and type")
			}
		},
		"fields": func(k string, v *yaml.Node) {
			j.Fields = p.columns(v, k)
			if v.Kind == yaml.MappingNode && len(v.Content) == 0 {
				p.errorf(v, k, "declare at least one field")
			}
			for _, f := range j.Fields {
				if f.HasDefault() {
					p.errs = append(p.errs, &Error{File: p.file, Line: f.Pos.Line, Column: f.Pos.Column, Key: k + "." + f.Name,
						Msg: "a field of a JSON payload has no column, so no default; leave the field out of the document instead (nullable: true)"})
				}
			}
		},
	})
	if n.Kind == yaml.MappingNode && p.hasKey(n, "go_type") == p.hasKey(n, "fields") {
		p.errorf(n, key, "give exactly one of go_type: or fields:")
	}
	return j
}

var (
	importRE   = regexp.MustCompile(`^[A-Za-z0-9_.~+-]+(/[A-Za-z0-9_.~+-]+)*$`)
	exportedRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9_]*$`)
)

// columns reads a mapping of column name to type, where the type is either
// a type string ("text", "varchar(200)[]") or a mapping {type, nullable,
// default}.
func (p *parser) columns(n *yaml.Node, key string) []*Column {
	var cols []*Column
	seen := map[string]bool{}
	p.pairs(n, key, func(k, v *yaml.Node) {
		ck := join(key, k.Value)
		c := &Column{Pos: Pos{k.Line, k.Column}}
		c.Name = p.ident(k, ck)
		if c.Name != "" && p.rules.SystemColumns[c.Name] {
			p.errorf(k, ck, "%q is a %s system column name", c.Name, p.rules.Title)
			c.Name = ""
		}
		if c.Name != "" && seen[c.Name] {
			p.errorf(k, ck, "column declared twice")
		}
		seen[c.Name] = true
		var defaultNode, defaultSQLNode *yaml.Node
		switch v.Kind {
		case yaml.ScalarNode:
			c.Type = p.sqlType(v, ck)
		case yaml.MappingNode:
			p.fields(v, ck, map[string]func(string, *yaml.Node){
				"type":         func(k string, v *yaml.Node) { c.Type = p.sqlType(v, k) },
				"nullable":     func(k string, v *yaml.Node) { c.Nullable = p.boolean(v, k) },
				"default":      func(k string, v *yaml.Node) { defaultNode = v },
				"default_sql":  func(k string, v *yaml.Node) { defaultSQLNode = v },
				"renamed_from": func(k string, v *yaml.Node) { c.RenamedFrom = p.ident(v, k) },
			})
			if !p.hasKey(v, "type") {
				p.errorf(v, ck, "missing: type")
			}
		default:
			p.errorf(v, ck, "want a type such as text, or {type: text, nullable: true}; got %s", describe(v))
		}
		switch {
		case defaultNode != nil && defaultSQLNode != nil:
			p.errorf(defaultSQLNode, ck+".default_sql", "give default: (a value) or default_sql: (an SQL expression), not both")
		case c.Type.Name == "":
		case defaultNode != nil:
			if v, ok := p.defaultValue(defaultNode, ck+".default", c.Type); ok {
				c.Default = &v
			}
		case defaultSQLNode != nil:
			c.DefaultSQL = p.defaultSQL(defaultSQLNode, ck+".default_sql", c.Type)
		}
		if c.Name != "" {
			cols = append(cols, c)
		}
	})
	return cols
}

var typeRE = regexp.MustCompile(`^([a-z ]+?)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*(\[\])?$`)

// typeNames maps each accepted spelling to the canonical type name.
var typeNames = map[string]string{
	"text": "text", "varchar": "varchar", "character varying": "varchar",
	"smallint": "smallint", "int2": "smallint",
	"integer": "integer", "int": "integer", "int4": "integer",
	"bigint": "bigint", "int8": "bigint",
	"boolean": "boolean", "bool": "boolean",
	"numeric": "numeric", "decimal": "numeric",
	"real": "real", "float4": "real",
	"double precision": "double precision", "double": "double precision", "float8": "double precision",
	"uuid": "uuid", "timestamptz": "timestamptz", "timestamp with time zone": "timestamptz",
	"date": "date", "jsonb": "jsonb", "bytea": "bytea",
}

func (p *parser) sqlType(n *yaml.Node, key string) Type {
	v, ok := p.scalar(n, key)
	if !ok {
		return Type{}
	}
	m := typeRE.FindStringSubmatch(strings.ToLower(strings.TrimSpace(v)))
	name := ""
	if m != nil {
		name = typeNames[m[1]]
	}
	if name == "" {
		p.errorf(n, key, "unknown type %q: use text, varchar(n), smallint, integer, bigint, boolean, numeric, real, double precision, uuid, timestamptz, date, jsonb or bytea, or an array of one (text[])", v)
		return Type{}
	}
	t := Type{Name: name, Array: m[4] != ""}
	for _, mod := range m[2:4] {
		if mod != "" {
			i, _ := strconv.Atoi(mod)
			t.Mods = append(t.Mods, i)
		}
	}
	switch {
	case name == "varchar" && (len(t.Mods) != 1 || t.Mods[0] < 1 || t.Mods[0] > 10485760):
		p.errorf(n, key, "varchar needs a length from 1 to 10485760, e.g. varchar(200); use text for no limit")
	case name == "numeric" && len(t.Mods) > 0 && (t.Mods[0] < 1 || t.Mods[0] > 1000 || len(t.Mods) == 2 && t.Mods[1] > t.Mods[0]):
		p.errorf(n, key, "numeric(precision, scale) needs 1 <= precision <= 1000 and scale <= precision")
	case name != "varchar" && name != "numeric" && len(t.Mods) > 0:
		p.errorf(n, key, "type %s takes no (…) modifier", name)
	}
	return t
}

// defaultValue reads a column default: a value of the column's type,
// written as YAML writes it (default: webp, default: 3). It is checked
// here; engines write it as a literal (values never reach SQL as raw
// text).
func (p *parser) defaultValue(n *yaml.Node, key string, t Type) (string, bool) {
	v, ok := p.scalar(n, key)
	if !ok {
		return "", false
	}
	bad := func(format string, args ...any) (string, bool) {
		p.errorf(n, key, format, args...)
		return "", false
	}
	if t.Array {
		return bad("defaults for array columns are not supported")
	}
	switch t.Name {
	case "smallint", "integer", "bigint":
		bits := map[string]int{"smallint": 16, "integer": 32, "bigint": 64}[t.Name]
		if _, err := strconv.ParseInt(v, 10, bits); err != nil {
			return bad("defaults of %s columns are whole numbers that fit the type, got %q", t.Name, v)
		}
	case "numeric", "real", "double precision":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || strings.ContainsAny(v, "xXpP_") {
			return bad("defaults of %s columns are finite numbers, got %q", t.Name, v)
		}
	case "boolean":
		if v != "true" && v != "false" {
			return bad("want true or false, got %q", v)
		}
	case "text", "varchar":
		if len(v) >= 2 && strings.HasPrefix(v, "'") && strings.HasSuffix(v, "'") {
			return bad("a default is a value, not SQL: write default: %s (queuegen quotes it); the quotes would be stored as part of it", strings.Trim(v, "'"))
		}
		if len(t.Mods) == 1 && utf8.RuneCountInString(v) > t.Mods[0] {
			return bad("the default is longer than varchar(%d)", t.Mods[0])
		}
	case "timestamptz":
		if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
			return bad("defaults of timestamptz columns are times such as 2026-01-02T15:04:05Z, got %q; for the time of the push, use default_sql: now()", v)
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, v); err != nil {
			return bad("defaults of date columns are dates such as 2026-01-02, got %q; for the day of the push, use default_sql: current_date", v)
		}
	case "uuid":
		if !uuidRE.MatchString(v) {
			return bad("defaults of uuid columns are UUIDs such as 123e4567-e89b-12d3-a456-426614174000, got %q; for a new one per job, use default_sql: gen_random_uuid()", v)
		}
	case "jsonb":
		if !json.Valid([]byte(v)) {
			return bad("defaults of jsonb columns are JSON documents, got %q", v)
		}
		if jsonHoldsNUL(v) {
			return bad("the default's JSON holds \\u0000, a NUL character, which PostgreSQL's jsonb cannot store (queuegen stores no NUL in any column); remove it")
		}
	case "bytea":
		return bad("defaults for bytea columns are not supported")
	}
	if strings.ContainsRune(v, 0) || !utf8.ValidString(v) {
		return bad("the default holds a NUL byte or invalid UTF-8")
	}
	if len(v) > MaxDefaultLength {
		return bad("the default is %d bytes long; a default is at most %d bytes", len(v), MaxDefaultLength)
	}
	if strings.Contains(v, "+goose") {
		return bad("the default holds \"+goose\", which goose would read as an annotation of the migration")
	}
	return v, true
}

// jsonHoldsNUL reports whether a valid JSON document has a string (a key
// or a value) holding U+0000, written \u0000.
func jsonHoldsNUL(doc string) bool {
	dec := json.NewDecoder(strings.NewReader(doc))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if s, ok := tok.(string); ok && strings.ContainsRune(s, 0) {
			return true
		}
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// defaultSQL reads a column default given as an SQL expression: one of
// DefaultExpressions that fits the column's type.
func (p *parser) defaultSQL(n *yaml.Node, key string, t Type) string {
	v, ok := p.scalar(n, key)
	if !ok {
		return ""
	}
	expr := strings.ToLower(strings.TrimSpace(v))
	types, known := DefaultExpressions[expr]
	if !known || t.Array || !slices.Contains(types, t.Name) {
		var fit []string
		for e, ts := range DefaultExpressions {
			if slices.Contains(ts, t.Name) && !t.Array {
				fit = append(fit, e)
			}
		}
		sort.Strings(fit)
		if len(fit) == 0 {
			p.errorf(n, key, "columns of type %s take no SQL default; use default: with a value", t.SQL())
		} else {
			p.errorf(n, key, "%q is not an SQL default queuegen writes for columns of type %s: use %s, or default: with a value", v, t.SQL(), strings.Join(fit, " or "))
		}
		return ""
	}
	return expr
}

var goKeywords = map[string]bool{
	"break": true, "case": true, "chan": true, "const": true, "continue": true, "default": true,
	"defer": true, "else": true, "fallthrough": true, "for": true, "func": true, "go": true,
	"goto": true, "if": true, "import": true, "interface": true, "map": true, "package": true,
	"range": true, "return": true, "select": true, "struct": true, "switch": true, "type": true, "var": true,
}
