// Package payload holds a payload type defined outside the generated
// package, for the e2e spec's go_type queue.
package payload

import "encoding/json"

// Webhook is the payload of the e2e webhook queue.
type Webhook struct {
	URL  string          `json:"url"`
	Body json.RawMessage `json:"body,omitempty"`
}

// Task is the payload of the queues the suites that run on every engine
// share (task, kept, nowait, txtask): one Go type for both engines'
// generated packages, so that one test drives either.
type Task struct {
	Name string `json:"name"`
	N    int    `json:"n,omitempty"`
}
