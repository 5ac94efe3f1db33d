//go:build citus

package dbtest

func init() { citusSelected = true }
