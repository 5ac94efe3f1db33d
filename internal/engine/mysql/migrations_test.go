package mysql

import "testing"

// TestTooOld: migrate refuses MySQL before 8.0.13 and MariaDB before 10.8,
// as SELECT VERSION() spells them, and takes the versions after.
func TestTooOld(t *testing.T) {
	for version, old := range map[string]bool{
		"8.0.12":                    true,
		"8.0.13":                    false,
		"8.4.2":                     false,
		"5.7.44-log":                true,
		"10.7.8-MariaDB":            true,
		"10.8.0-MariaDB":            false,
		"10.11.6-MariaDB-0+deb12u1": false,
		"11.4.2-MariaDB":            false,
	} {
		if got := TooOld(version) != ""; got != old {
			t.Errorf("TooOld(%q) refuses: %t, want %t (%q)", version, got, old, TooOld(version))
		}
	}
}
