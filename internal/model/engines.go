package model

// The engines a spec may name. A new engine is one more import here.
import (
	_ "github.com/queuegen/queuegen/internal/engine/mysql"
	_ "github.com/queuegen/queuegen/internal/engine/postgres"
	_ "github.com/queuegen/queuegen/internal/engine/sqlserver"
)
