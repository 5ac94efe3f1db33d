// Package all links every engine queuegen knows: importing it registers
// each with package engine. It is the one list of engines; a new engine
// is one more import here.
package all

import (
	_ "github.com/queuegen/queuegen/internal/engine/mysql"
	_ "github.com/queuegen/queuegen/internal/engine/postgres"
	_ "github.com/queuegen/queuegen/internal/engine/sqlserver"
)
