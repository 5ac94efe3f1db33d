package dashboard

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/ops"
	"github.com/queuegen/queuegen/queue"
)

//go:embed assets
var assetFS embed.FS

//go:embed templates
var templateFS embed.FS

// parsePages parses the templates: each page a template of its own name,
// between layout.html's top and bottom.
func parsePages() (*template.Template, error) {
	root := template.New("root").Funcs(funcs)
	if _, err := root.ParseFS(templateFS, "templates/*.html"); err != nil {
		return nil, err
	}
	return root, nil
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"count": func(n int64, estimated bool) string {
		s := groupDigits(n)
		if estimated {
			return "≈" + s
		}
		return s
	},
	"age": func(d time.Duration) string {
		if d <= 0 {
			return "–"
		}
		return shortDuration(d)
	},
	"when": func(t any) string {
		switch t := t.(type) {
		case time.Time:
			return t.UTC().Format("2006-01-02 15:04:05")
		case *time.Time:
			if t != nil {
				return t.UTC().Format("2006-01-02 15:04:05")
			}
		}
		return "–"
	},
	"deref": func(s *string) string {
		if s == nil {
			return "–"
		}
		return *s
	},
	"trunc": func(s string, n int) string {
		s = strings.ToValidUTF8(s, "\uFFFD")
		if r := []rune(s); len(r) > n {
			return string(r[:n]) + "…"
		}
		return s
	},
	"compact": func(raw json.RawMessage) string {
		var b bytes.Buffer
		if json.Compact(&b, raw) != nil {
			return string(raw)
		}
		return b.String()
	},
	"lastError": func(errs []string) string {
		if len(errs) == 0 {
			return ""
		}
		first, _, _ := strings.Cut(errs[len(errs)-1], "\n")
		return first
	},
	"add":     func(a, b int) int { return a + b },
	"ago":     func(t any) template.HTML { return ago(t, time.Now()) },
	"agoAt":   ago,
	"past":    func(t *time.Time) bool { return t != nil && t.Before(time.Now()) },
	"preview": preview,
	"danger":  func(a ops.Action) bool { return a != ops.Retry },
}

// ago is t as a time relative to now ("3 min ago", "in 5 s"), in a
// <time> element holding the absolute time (UTC) as its datetime and its
// title, which shows on hover; "–" for none.
func ago(t any, now time.Time) template.HTML {
	var at time.Time
	switch t := t.(type) {
	case time.Time:
		at = t
	case *time.Time:
		if t == nil {
			return "–"
		}
		at = *t
	default:
		return "–"
	}
	d := now.Sub(at)
	rel := relative(d.Abs())
	switch {
	case d.Abs() < time.Second:
		rel = "now"
	case d > 0:
		rel += " ago"
	default:
		rel = "in " + rel
	}
	abs := at.UTC().Format("2006-01-02 15:04:05")
	return template.HTML(`<time datetime="` + at.UTC().Format(time.RFC3339Nano) + `" title="` + abs + ` UTC">` + rel + `</time>`)
}

// relative is d in the one unit that matters at a glance.
func relative(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
	return fmt.Sprintf("%d d", int(d.Hours()/24))
}

// preview is a payload as one line of JSON, its columns in order (the
// table's, which is the spec's) rather than jsonb's shortest-key-first
// order; columns order does not name follow, by name.
func preview(raw json.RawMessage, order []string) string {
	var cols map[string]json.RawMessage
	if json.Unmarshal(raw, &cols) != nil {
		var b bytes.Buffer
		if json.Compact(&b, raw) != nil {
			return string(raw)
		}
		return b.String()
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range ordered(cols, order) {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(f.Name)
		b.Write(name)
		b.WriteByte(':')
		var v bytes.Buffer
		if json.Compact(&v, []byte(f.Value)) != nil {
			v.Reset()
			v.WriteString(f.Value)
		}
		b.Write(v.Bytes())
	}
	b.WriteByte('}')
	return b.String()
}

// ordered is a payload's columns in order, then those order does not name,
// by name.
func ordered(cols map[string]json.RawMessage, order []string) []field {
	fields := make([]field, 0, len(cols))
	for _, name := range order {
		if raw, ok := cols[name]; ok {
			fields = append(fields, field{Name: name, Value: string(raw)})
		}
	}
	var rest []field
	for name, raw := range cols {
		if !slices.Contains(order, name) {
			rest = append(rest, field{Name: name, Value: string(raw)})
		}
	}
	slices.SortFunc(rest, func(a, b field) int { return strings.Compare(a.Name, b.Name) })
	return append(fields, rest...)
}

// groupDigits writes n with thin spaces between groups of three digits.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteString("\u202f")
		}
		b.WriteRune(r)
	}
	return b.String()
}

// shortDuration is d rounded to what matters at a glance.
func shortDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return d.Round(time.Minute).String()
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// queue finds the queue the path names, or renders a problem page.
func (h *Handler) queue(w http.ResponseWriter, r *http.Request) (ops.Queue, bool) {
	q, err := h.conn.Find(r.Context(), r.PathValue("queue"))
	if err != nil {
		h.problem(w, r, http.StatusNotFound, err)
		return q, false
	}
	return q, true
}

// jobID reads the job id the path names, or renders a problem page.
func (h *Handler) jobID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		h.problem(w, r, http.StatusNotFound, fmt.Errorf("no job %q: want a job id", clean(r.PathValue("id"))))
		return 0, false
	}
	return id, true
}

// view is what every page renders from.
type view struct {
	P        string // the prefix
	Title    string
	CSRF     string
	ReadOnly bool
	Engine   string
	Server   string // the product: PostgreSQL, MySQL, MariaDB or SQL Server
	Flash    string // the outcome of the last action, from ?done=
	Data     any
}

// render renders page name with data, or a problem page.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	v := view{P: h.cfg.prefix, Title: title, ReadOnly: h.cfg.readOnly, Engine: h.conn.Engine(), Data: data,
		Flash: clean(r.URL.Query().Get("done"))}
	if !h.cfg.readOnly {
		v.CSRF = h.csrf.token(w, r)
	}
	v.Server = v.Engine
	if p, err := h.conn.Product(r.Context()); err == nil {
		v.Server = p
	}
	var b bytes.Buffer
	if err := h.pages.ExecuteTemplate(&b, name, v); err != nil {
		http.Error(w, "rendering "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// problem renders an error page.
func (h *Handler) problem(w http.ResponseWriter, r *http.Request, status int, err error) {
	h.render(w, r, status, "problem", "Problem", strings.ToValidUTF8(err.Error(), "\uFFFD"))
}

// clean makes request text safe to show: valid UTF-8, bounded.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > 500 {
		s = s[:500]
	}
	return strings.ToValidUTF8(s, "")
}

// queueRow is one queue on the overview.
type queueRow struct {
	ops.Glance
	Problem string
}

// glances reads every queue's counts, the queues at once.
func (h *Handler) glances(ctx context.Context) ([]queueRow, error) {
	qs, err := h.conn.Queues(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]queueRow, len(qs))
	var wg sync.WaitGroup
	for i, q := range qs {
		wg.Go(func() {
			g, err := h.conn.Glance(ctx, q, h.cfg.budget)
			rows[i] = queueRow{Glance: g}
			if err != nil {
				rows[i].Problem = err.Error()
			}
		})
	}
	wg.Wait()
	return rows, nil
}

func (h *Handler) overview(w http.ResponseWriter, r *http.Request) {
	rows, err := h.glances(r.Context())
	if err != nil {
		h.problem(w, r, http.StatusBadGateway, err)
		return
	}
	h.render(w, r, http.StatusOK, "overview", "Queues", overviewData{Queues: rows, States: ops.GlanceStates[:], Budget: h.cfg.budget})
}

type overviewData struct {
	Queues []queueRow
	States []string
	Budget time.Duration
}

// overviewTable is the overview's table alone, which the overview
// fetches every few seconds.
func (h *Handler) overviewTable(w http.ResponseWriter, r *http.Request) {
	rows, err := h.glances(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	h.render(w, r, http.StatusOK, "queues-table", "", overviewData{Queues: rows, States: ops.GlanceStates[:], Budget: h.cfg.budget})
}

// series is the throughput chart's data: minutes, and per series one
// value per minute (null where there is none).
type series struct {
	At     []int64     `json:"at"` // Unix seconds, each minute's start
	Series []namedLine `json:"series"`
	Note   string      `json:"note,omitempty"`
}

type namedLine struct {
	Label  string     `json:"label"`
	Values []*float64 `json:"values"`
}

// throughput serves one queue's chart data for the last hour.
func (h *Handler) throughput(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q, err := h.conn.Find(ctx, r.PathValue("queue"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	end := time.Now().UTC().Truncate(time.Minute)
	start := end.Add(-59 * time.Minute)
	var s series
	for t := start; !t.After(end); t = t.Add(time.Minute) {
		s.At = append(s.At, t.Unix())
	}
	slot := func(t time.Time) int {
		i := int(t.UTC().Truncate(time.Minute).Sub(start) / time.Minute)
		if i < 0 || i >= len(s.At) {
			return -1
		}
		return i
	}
	finished, ok, err := h.conn.Finished(ctx, q, start, 4*h.cfg.budget)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if ok {
		line := namedLine{Label: "finished (rows kept)", Values: make([]*float64, len(s.At))}
		for i := range line.Values {
			line.Values[i] = new(float64)
		}
		for _, m := range finished {
			if i := slot(m.At); i >= 0 {
				*line.Values[i] = float64(m.N)
			}
		}
		s.Series = append(s.Series, line)
	} else {
		s.Note = "too many finished jobs to count by minute within the budget"
	}
	at, pushed, deleted, have := h.sample.perMinute(q.Table)
	if have {
		p := namedLine{Label: "pushed", Values: make([]*float64, len(s.At))}
		d := namedLine{Label: "deleted", Values: make([]*float64, len(s.At))}
		// One value per minute, its count (perMinute sums each minute's
		// readings); a minute without two readings stays a gap.
		for k, t := range at {
			if i := slot(t); i >= 0 {
				p.Values[i], d.Values[i] = &pushed[k], &deleted[k]
			}
		}
		s.Series = append(s.Series, p, d)
	} else if s.Note == "" {
		s.Note = dburl.EngineTitle(h.conn.Engine()) + " keeps no running per-table row counters: jobs deleted on success are not charted"
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(s)
}

// filterOf reads a job list's filter from the query string.
func filterOf(v url.Values) (ops.Filter, error) {
	f := ops.Filter{State: clean(v.Get("state")), Column: clean(v.Get("column")), Value: clean(v.Get("value")),
		ErrorText: clean(v.Get("error"))}
	if f.State == "" {
		f.State = "all"
	}
	if f.Column == "" {
		f.Value = ""
	}
	for _, t := range []struct {
		key string
		dst *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		s := v.Get(t.key)
		if s == "" {
			continue
		}
		at, err := time.Parse("2006-01-02T15:04", s)
		if err != nil {
			if at, err = time.Parse("2006-01-02T15:04:05", s); err != nil {
				return f, fmt.Errorf("%s %q: want a time such as 2026-11-24T09:30 (UTC)", t.key, clean(s))
			}
		}
		*t.dst = at
	}
	return f, nil
}

// query is the filter as a query string.
func query(f ops.Filter) url.Values {
	v := url.Values{}
	v.Set("state", f.State) // always, "all" too: an action's form must name it

	if !f.Since.IsZero() {
		v.Set("since", f.Since.Format("2006-01-02T15:04"))
	}
	if !f.Until.IsZero() {
		v.Set("until", f.Until.Format("2006-01-02T15:04"))
	}
	if f.Column != "" {
		v.Set("column", f.Column)
		v.Set("value", f.Value)
	}
	if f.ErrorText != "" {
		v.Set("error", f.ErrorText)
	}
	return v
}

// pageSize is how many jobs a list shows.
const pageSize = 50

// listTimeout bounds a job list's query: a filter that matches few jobs
// of a large table can take long to fill a page.
const listTimeout = 10 * time.Second

type jobsData struct {
	Queue   ops.Queue
	Filter  ops.Filter
	Since   string
	Until   string
	States  []string
	Columns []string
	Jobs    []ops.Job
	Query   template.URL // the filter's query string, encoded
	Older   template.URL // the next page's query string, when there may be one
	Before  int64
	Actions []ops.Action
	// Order is the payload columns' order, for the previews.
	Order []string
	// Total counts the jobs the filter matches, exact unless Estimated
	// (the planner's estimate); TotalKnown is false when neither could be
	// had in time.
	Total                 int64
	TotalKnown, Estimated bool
	CountTimeout          time.Duration
	// Died shows the died-at column (lists of dead jobs).
	Died bool
	// Fields are the filter's, for the form of the jobs checked.
	Fields url.Values
}

func (h *Handler) jobs(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), listTimeout)
	defer cancel()
	q, ok := h.queue(w, r)
	if !ok {
		return
	}
	var err error
	d := jobsData{Queue: q, States: ops.FilterStates}
	if d.Columns, err = h.conn.Columns(ctx, q); err != nil {
		h.problem(w, r, http.StatusBadGateway, err)
		return
	}
	if d.Filter, err = filterOf(r.URL.Query()); err != nil {
		h.problem(w, r, http.StatusBadRequest, err)
		return
	}
	// The actions that can apply to some job the filter selects, as the
	// CLI allows them (no retry of available jobs, for one).
	for _, a := range []ops.Action{ops.Retry, ops.Cancel, ops.Purge} {
		if a.AppliesTo(d.Filter.State) {
			d.Actions = append(d.Actions, a)
		}
	}
	if !d.Filter.Since.IsZero() {
		d.Since = d.Filter.Since.Format("2006-01-02T15:04")
	}
	if !d.Filter.Until.IsZero() {
		d.Until = d.Filter.Until.Format("2006-01-02T15:04")
	}
	if b := r.URL.Query().Get("before"); b != "" {
		if d.Before, err = strconv.ParseInt(b, 10, 64); err != nil || d.Before <= 0 {
			h.problem(w, r, http.StatusBadRequest, fmt.Errorf("before %q: want a job id", clean(b)))
			return
		}
	}
	if d.Order, err = h.conn.PayloadOrder(ctx, q); err != nil {
		h.problem(w, r, http.StatusBadGateway, err)
		return
	}
	d.Died = d.Filter.State == "dead" || d.Filter.State == "failed"
	d.CountTimeout = h.countTimeout()
	d.Total, d.TotalKnown, d.Estimated = h.total(ctx, q, d.Filter)
	d.Jobs, err = h.conn.Jobs(ctx, q, d.Filter, d.Before, pageSize)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("listing the jobs took longer than %v: this filter matches few of the queue's jobs; narrow it (a time range, a state) and try again", listTimeout)
		}
		h.problem(w, r, http.StatusBadRequest, err)
		return
	}
	// Encoded here, and typed as a URL so that the template keeps its =
	// and & as they are: a string there would be escaped whole, and a link
	// would lose its filter (a bulk action then meaning every job).
	v := query(d.Filter)
	d.Fields = query(d.Filter)
	d.Query = template.URL(v.Encode())
	if len(d.Jobs) == pageSize {
		v.Set("before", strconv.FormatInt(d.Jobs[len(d.Jobs)-1].ID, 10))
		d.Older = template.URL(v.Encode())
	}
	h.render(w, r, http.StatusOK, "jobs", q.Name, d)
}

// countTimeout bounds the exact count of a job list: the count budget,
// as for the overview's counts, so that a list of a large table costs at
// most that and a plan more.
func (h *Handler) countTimeout() time.Duration { return h.cfg.budget }

// total counts the jobs f matches: exactly when one statement does it
// within countTimeout; else, for a filter by state alone, the planner's
// estimate (estimated); else nothing (known false). A filter by state
// alone whose estimate is more than countTimeout can count gets the
// estimate at once, rather than after a count it would lose (with
// 1,000,000 jobs, a list's server time fell from about 70 ms to 20 ms).
func (h *Handler) total(ctx context.Context, q ops.Queue, f ops.Filter) (n int64, known, estimated bool) {
	stateOnly := f.Since.IsZero() && f.Until.IsZero() && f.Column == "" && f.ErrorText == ""
	state := cmp.Or(f.State, "all")
	if stateOnly {
		if n, err := h.conn.Estimate(ctx, q, state); err == nil && !ops.Countable(n, h.countTimeout()) {
			return n, true, true
		}
	}
	cctx, cancel := context.WithTimeout(ctx, h.countTimeout())
	defer cancel()
	n, err := h.conn.Count(cctx, q, f, ops.Purge) // purge applies to every job
	if err == nil {
		return n, true, false
	}
	if stateOnly {
		if n, err := h.conn.Estimate(ctx, q, state); err == nil {
			return n, true, true
		}
	}
	return 0, false, false
}

// find jumps to a job by its id.
func (h *Handler) find(w http.ResponseWriter, r *http.Request) {
	q, err := h.conn.Find(r.Context(), r.URL.Query().Get("queue"))
	if err != nil {
		h.problem(w, r, http.StatusNotFound, err)
		return
	}
	s := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(r.URL.Query().Get("id")), "#"))
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		h.problem(w, r, http.StatusBadRequest, fmt.Errorf("job id %q: want a job id, such as 42", clean(s)))
		return
	}
	http.Redirect(w, r, fmt.Sprintf("%s/queues/%s/jobs/%d", h.cfg.prefix, url.PathEscape(q.Name), id), http.StatusSeeOther)
}

type jobData struct {
	Queue   ops.Queue
	Job     ops.Job
	Payload []field
	Actions []ops.Action
}

// field is one payload column, its value as JSON.
type field struct{ Name, Value string }

func (h *Handler) job(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q, ok := h.queue(w, r)
	if !ok {
		return
	}
	id, ok := h.jobID(w, r)
	if !ok {
		return
	}
	j, err := h.conn.GetJob(ctx, q, id)
	if err != nil {
		var none *ops.NoJobError
		status := http.StatusBadGateway
		if errors.As(err, &none) {
			status = http.StatusNotFound
		}
		h.problem(w, r, status, err)
		return
	}
	d := jobData{Queue: q, Job: j}
	order, err := h.conn.PayloadOrder(ctx, q)
	if err != nil {
		h.problem(w, r, http.StatusBadGateway, err)
		return
	}
	var cols map[string]json.RawMessage
	if json.Unmarshal(j.Payload, &cols) == nil {
		for _, f := range ordered(cols, order) {
			var b bytes.Buffer
			if json.Indent(&b, []byte(f.Value), "", "  ") != nil {
				b.Reset()
				b.WriteString(f.Value)
			}
			d.Payload = append(d.Payload, field{Name: f.Name, Value: b.String()})
		}
	}
	// Shown where they apply, on this server's clock (Apply decides on
	// the database's, and says why when it does not apply).
	now := time.Now()
	for _, a := range []ops.Action{ops.Retry, ops.Cancel, ops.Purge} {
		if a.AppliesToJob(j, now) {
			d.Actions = append(d.Actions, a)
		}
	}
	h.render(w, r, http.StatusOK, "job", fmt.Sprintf("%s job %d", q.Name, id), d)
}

type confirmData struct {
	Queue  ops.Queue
	Action ops.Action
	Filter ops.Filter
	Query  template.URL // the filter's query string, encoded
	Fields url.Values
	Count  int64
}

// confirm shows what an action on the jobs a filter matches will touch,
// and asks to go on.
func (h *Handler) confirm(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), listTimeout)
	defer cancel()
	q, ok := h.queue(w, r)
	if !ok {
		return
	}
	action, err := actionOf(r.URL.Query().Get("action"))
	if err != nil {
		h.problem(w, r, http.StatusBadRequest, err)
		return
	}
	f, err := filterOf(r.URL.Query())
	if err != nil {
		h.problem(w, r, http.StatusBadRequest, err)
		return
	}
	if !action.AppliesTo(f.State) {
		h.problem(w, r, http.StatusBadRequest, neverApplies(action, f.State))
		return
	}
	n, err := h.conn.Count(ctx, q, f, action)
	if err != nil {
		h.problem(w, r, http.StatusBadRequest, err)
		return
	}
	v := query(f)
	h.render(w, r, http.StatusOK, "confirm", fmt.Sprintf("%s: %s", q.Name, action),
		confirmData{Queue: q, Action: action, Filter: f, Query: template.URL(v.Encode()), Fields: v, Count: n})
}

// neverApplies is the CLI's refusal of an action on a state it never
// applies to.
func neverApplies(a ops.Action, state string) error {
	return fmt.Errorf("%s never applies to %s jobs (it applies to %s): nothing to do", a, state, a.Applies())
}

// actionOf parses an action's name.
func actionOf(s string) (ops.Action, error) {
	switch a := ops.Action(s); a {
	case ops.Retry, ops.Cancel, ops.Purge:
		return a, nil
	}
	return "", fmt.Errorf("unknown action %q: want retry, cancel or purge", clean(s))
}

// queueAction is pause, resume, or an action on the jobs a filter
// matches (the form of the confirm page).
func (h *Handler) queueAction(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q, ok := h.queue(w, r)
	if !ok {
		return
	}
	back := h.cfg.prefix + "/"
	var done string
	switch name := r.PathValue("action"); name {
	case "pause", "resume":
		if err := h.conn.SetPaused(ctx, q, name == "pause"); err != nil {
			h.problem(w, r, http.StatusBadGateway, err)
			return
		}
		done = fmt.Sprintf("queue %s %sd", q.Name, name)
	default:
		action, err := actionOf(name)
		if err != nil {
			h.problem(w, r, http.StatusNotFound, err)
			return
		}
		// The job list's form of the jobs checked: the action on each.
		if r.PostForm.Has("selected") {
			f, err := filterOf(r.PostForm) // the list to go back to
			if err != nil {
				h.problem(w, r, http.StatusBadRequest, err)
				return
			}
			res, skipped, err := h.applyEach(ctx, q, action, r.PostForm["id"])
			if err != nil {
				h.problem(w, r, http.StatusBadRequest, err)
				return
			}
			done = outcome(action, res)
			for _, s := range skipped {
				done += "; " + s
			}
			back = h.cfg.prefix + "/queues/" + url.PathEscape(q.Name) + "?" + query(f).Encode()
			break
		}
		// The confirm page's form always names the state, "all" too: one
		// that does not was not made by it, and must not default to every
		// job.
		if r.PostForm.Get("state") == "" {
			h.problem(w, r, http.StatusBadRequest, fmt.Errorf("%s: the form names no state; start from the confirm page", action))
			return
		}
		f, err := filterOf(r.PostForm)
		if err != nil {
			h.problem(w, r, http.StatusBadRequest, err)
			return
		}
		if !action.AppliesTo(f.State) {
			h.problem(w, r, http.StatusBadRequest, neverApplies(action, f.State))
			return
		}
		res, err := h.conn.Apply(ctx, q, f, action, nil)
		if err != nil {
			h.problem(w, r, http.StatusBadRequest, err)
			return
		}
		done = outcome(action, res)
		back = h.cfg.prefix + "/queues/" + url.PathEscape(q.Name) + "?" + query(f).Encode()
	}
	h.redirect(w, r, back, done)
}

// applyEach applies action to each job of ids, as its button on the
// job's page would; skipped says why a job it did not apply to was left.
func (h *Handler) applyEach(ctx context.Context, q ops.Queue, action ops.Action, ids []string) (*ops.Result, []string, error) {
	if len(ids) == 0 {
		return nil, nil, fmt.Errorf("%s: no job is checked", action)
	}
	if len(ids) > pageSize {
		return nil, nil, fmt.Errorf("%s: %d jobs checked; at most %d (a page) at once", action, len(ids), pageSize)
	}
	all := &ops.Result{}
	var skipped []string
	for _, s := range ids {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id <= 0 {
			return nil, nil, fmt.Errorf("job id %q: want a job id", clean(s))
		}
		res, err := h.conn.Apply(ctx, q, ops.Filter{ID: id}, action, nil)
		var none *ops.NoJobError
		if errors.As(err, &none) {
			skipped = append(skipped, none.Error())
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		all.Changed = append(all.Changed, res.Changed...)
		all.Locked = append(all.Locked, res.Locked...)
		all.Conflicts = append(all.Conflicts, res.Conflicts...)
	}
	return all, skipped, nil
}

// jobAction is an action on one job.
func (h *Handler) jobAction(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q, ok := h.queue(w, r)
	if !ok {
		return
	}
	id, ok := h.jobID(w, r)
	if !ok {
		return
	}
	action, err := actionOf(r.PathValue("action"))
	if err != nil {
		h.problem(w, r, http.StatusNotFound, err)
		return
	}
	res, err := h.conn.Apply(ctx, q, ops.Filter{ID: id}, action, nil)
	if err != nil {
		var none *ops.NoJobError
		status := http.StatusBadGateway
		if errors.As(err, &none) {
			status = http.StatusConflict
		}
		h.problem(w, r, status, err)
		return
	}
	back := fmt.Sprintf("%s/queues/%s/jobs/%d", h.cfg.prefix, url.PathEscape(q.Name), id)
	if action == ops.Purge && len(res.Changed) == 1 {
		back = h.cfg.prefix + "/queues/" + url.PathEscape(q.Name)
	}
	h.redirect(w, r, back, outcome(action, res))
}

// redirect sends the browser back after an action (POST, redirect, GET),
// with what it did.
func (h *Handler) redirect(w http.ResponseWriter, r *http.Request, to, done string) {
	sep := "?"
	if strings.Contains(to, "?") {
		sep = "&"
	}
	http.Redirect(w, r, to+sep+url.Values{"done": {done}}.Encode(), http.StatusSeeOther)
}

// outcome says what an action did, as the CLI does.
func outcome(a ops.Action, res *ops.Result) string {
	verb := map[ops.Action]string{ops.Retry: "retried", ops.Cancel: "cancelled", ops.Purge: "purged"}[a]
	s := fmt.Sprintf("%s %d job(s)", verb, len(res.Changed))
	if len(res.Locked) > 0 {
		s += fmt.Sprintf("; skipped %d held by a transaction in progress (try again once it ends)", len(res.Locked))
	}
	for _, c := range res.Conflicts {
		s += fmt.Sprintf("; job %d not retried: unfinished job %d holds its unique key %q", c.ID, c.Holder, c.Key)
	}
	return s
}

type periodicRow struct {
	Queue, Name, Schedule string
	Last, Next            *time.Time
}

func (h *Handler) periodic(w http.ResponseWriter, r *http.Request) {
	ticks, err := h.conn.Periodic(r.Context())
	if err != nil {
		h.problem(w, r, http.StatusBadGateway, err)
		return
	}
	last := map[[2]string]time.Time{}
	for _, t := range ticks {
		last[[2]string{t.Queue, t.Name}] = t.Last
	}
	var rows []periodicRow
	seen := map[[2]string]bool{}
	if s := h.cfg.spec; s != nil {
		for _, q := range s.Queues {
			for _, p := range q.Periodic {
				key := [2]string{q.Name, p.Name}
				seen[key] = true
				row := periodicRow{Queue: q.Name, Name: p.Name}
				if l, ok := last[key]; ok {
					row.Last = &l
				}
				from := time.Now()
				if row.Last != nil {
					from = *row.Last
				}
				var next time.Time
				if p.Cron != "" {
					row.Schedule = "cron " + p.Cron
					if c, err := queue.ParseCron(p.Cron); err == nil {
						next = c.Next(from.UTC())
					}
				} else {
					row.Schedule = "every " + p.Every.String()
					next = from.Add(p.Every)
					if row.Last == nil {
						next = time.Time{}
					}
				}
				if !next.IsZero() {
					row.Next = &next
				}
				rows = append(rows, row)
			}
		}
	}
	for _, t := range ticks {
		if !seen[[2]string{t.Queue, t.Name}] {
			l := t.Last
			rows = append(rows, periodicRow{Queue: t.Queue, Name: t.Name, Schedule: "(not in the spec given)", Last: &l})
		}
	}
	h.render(w, r, http.StatusOK, "periodic", "Periodic jobs", periodicData{Rows: rows, HaveSpec: h.cfg.spec != nil})
}

type periodicData struct {
	Rows     []periodicRow
	HaveSpec bool
}

// nodes is the Nodes page: the worker nodes of every queue, their last
// heartbeats, and the leases of the nodes that stopped heartbeating. Times
// are relative to the database's clock, which the heartbeats are too. A
// database whose nodes table is missing (its migration not applied) gets
// the page with the reason, so the rest of the dashboard stays usable.
func (h *Handler) nodes(w http.ResponseWriter, r *http.Request) {
	d := nodesData{Beats: ops.StaleBeats}
	rep, err := h.conn.Nodes(r.Context())
	switch {
	case errors.Is(err, ops.ErrNoNodesTable):
		d.Problem = err.Error()
	case err != nil:
		h.problem(w, r, http.StatusBadGateway, err)
		return
	default:
		d.Report = rep
	}
	h.render(w, r, http.StatusOK, "nodes", "Nodes", d)
}

type nodesData struct {
	Report  *ops.NodeReport
	Problem string
	Beats   int
}
