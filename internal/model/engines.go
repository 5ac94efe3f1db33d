package model

// The engines a spec may name: package all imports each of them.
import _ "github.com/queuegen/queuegen/internal/engine/all"
